#pragma once

// FreeBlockCanary: catches writes into blocks that belong to no request. Every block that
// goes back to the pool is filled with a pattern of its own (a word per 8 bytes, derived
// from the block index); when the allocator hands it out again the pattern is checked. A
// changed block means something wrote into it after its request ended: a late write of a
// transfer that was cancelled or failed, the very thing "nothing lands after an end" rules
// out. Off by default (KvAgentOptions::checkFreeBlocks): it costs a write and a read of
// every freed block. Host pools only (it reads the pool's bytes directly).
//
// Thread safety: none; the decode side calls it on the KV service thread.

#include <cstdint>
#include <span>
#include <vector>

#include "kv/pool/block_extent.h"
#include "kv/pool/kv_pool.h"

namespace kvx::kv {

class FreeBlockCanary {
 public:
  // FAILED_PRECONDITION when the pool's bytes are not host memory. Fills every block.
  static Result<std::unique_ptr<FreeBlockCanary>> create(const KvPool& pool);

  // Fills the blocks of `extents` with their patterns (they are being freed).
  void fill(std::span<const BlockExtent> extents);
  // The blocks of `extents` whose pattern changed since fill(), in order (they are being
  // handed out). Counts them in lateWrites().
  std::vector<std::uint64_t> check(std::span<const BlockExtent> extents);

  // Blocks found changed so far.
  std::uint64_t lateWrites() const { return lateWrites_; }

 private:
  explicit FreeBlockCanary(const KvPool& pool);
  // Every segment of `block`, as spans of the pool's memory.
  std::vector<std::span<std::byte>> segmentsOf(std::uint64_t block) const;

  const KvPool& pool_;
  std::uint64_t lateWrites_ = 0;
};

}  // namespace kvx::kv
