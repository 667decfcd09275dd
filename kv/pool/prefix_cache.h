#pragma once

// PrefixCache: the decode side's cache of KV blocks that hold reusable prompt prefixes.
// A prompt is a sequence of chunks (512 tokens each, as in the Mooncake trace format), each
// named by a hash id; equal ids mean the same prefix up to and including that chunk. The
// cache maps a chunk id to the blocks holding that chunk's tokens.
//
// Ownership: the cache owns the blocks of every chunk inserted into it, until it evicts the
// chunk and hands its extents back to the caller, who frees them into the BlockAllocator.
// The cache never allocates or frees blocks itself.
//
// Pinning: acquire() pins chunks (a reference count) while a request reads their blocks;
// pinned chunks are never evicted. Unpinned chunks are evicted least recently used first;
// a chunk counts as used when it is inserted and when its last pin is released.
//
// Capacity is in blocks; a capacity of 0 disables caching (insert() always refuses).
// Not thread-safe: one owning thread (the agent's strand for the pool) makes every call.

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv/pool/block_extent.h"
#include "kvx/result.h"

namespace kvx::kv {

class PrefixCache {
 public:
  explicit PrefixCache(std::uint64_t capacityBlocks) : capacityBlocks_(capacityBlocks) {}

  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // How many leading ids of `hashIds` are cached.
  std::size_t matchPrefix(std::span<const std::uint64_t> hashIds) const;

  // Pins every chunk of `hashIds` (an id listed twice is pinned twice) and returns their
  // extents concatenated in order. NOT_FOUND, naming the id and pinning nothing, when one is
  // not cached. Every successful acquire() needs a matching release().
  Result<std::vector<BlockExtent>> acquire(std::span<const std::uint64_t> hashIds);

  // Unpins every chunk of `hashIds`; a chunk whose last pin goes becomes the most recently
  // used. INVALID_ARGUMENT, naming the id and unpinning nothing, when an id is not cached or
  // would be unpinned more often than it is pinned.
  Status release(std::span<const std::uint64_t> hashIds);

  // Takes ownership of `extents`, the blocks of chunk `hashId`, and returns true. Makes room
  // first by evicting least recently used unpinned chunks, whose extents are appended to
  // `evictedOut` (the caller now owns those blocks). Returns false, evicting nothing, when
  // `hashId` is already cached or the chunk cannot fit beside the pinned chunks; the caller
  // then keeps its blocks. INVALID_ARGUMENT for no blocks, an empty or wrapping extent, or a
  // block that the extents repeat or that is already cached (under any id).
  Result<bool> insert(std::uint64_t hashId, std::vector<BlockExtent> extents,
                      std::vector<BlockExtent>& evictedOut);

  // Evicts least recently used unpinned chunks until at least `blocksWanted` blocks are
  // evicted or no unpinned chunk is left, and returns their extents (now the caller's).
  std::vector<BlockExtent> evict(std::uint64_t blocksWanted);
  // Evicts every unpinned chunk.
  std::vector<BlockExtent> evictAll();

  bool contains(std::uint64_t hashId) const { return chunks_.contains(hashId); }
  std::uint64_t capacityBlocks() const { return capacityBlocks_; }
  std::uint64_t cachedBlocks() const { return cachedBlocks_; }
  std::uint64_t pinnedBlocks() const { return pinnedBlocks_; }
  std::size_t cachedChunks() const { return chunks_.size(); }
  std::size_t pinnedChunks() const { return pinnedChunks_; }

 private:
  struct Chunk {
    std::vector<BlockExtent> extents;
    std::uint64_t blocks = 0;
    std::uint64_t pins = 0;
    std::list<std::uint64_t>::iterator lruPos;  // valid only while pins == 0
  };

  Status validateNewExtents(std::uint64_t hashId, std::span<const BlockExtent> extents) const;
  void evictOne(std::vector<BlockExtent>& out);

  std::uint64_t capacityBlocks_;
  std::uint64_t cachedBlocks_ = 0;
  std::uint64_t pinnedBlocks_ = 0;
  std::size_t pinnedChunks_ = 0;
  std::unordered_map<std::uint64_t, Chunk> chunks_;
  // Unpinned chunk ids, least recently used first.
  std::list<std::uint64_t> lru_;
  // Every cached extent by first block -> (count, chunk id), to reject a block cached twice.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> owners_;
};

}  // namespace kvx::kv
