#pragma once

// KvPool: one agent's KV-cache pool, bound to memory registered with its kvx::Agent. Each
// tensor of the layout is one region ("kv.t<i>"), either the server's own memory (wrapped)
// or allocated by the agent. The pool maps segments to bytes and to descriptor ranges.
//
// Ownership: the pool deregisters its regions on destruction; the Agent must outlive it.
// Thread safety: immutable after create(); segment() hands out views the caller
// synchronises itself; writeSegment and readSegment may be called from any thread (the
// caller keeps them from racing with moves of the same segment).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/pool/pool_description.h"
#include "kv/pool/pool_layout.h"
#include "kv/pool/segment_order.h"
#include "kvx/agent.h"
#include "kvx/kv_types.h"

namespace kvx::kv {

class KvPool {
 public:
  // INVALID_ARGUMENT for an unknown shape or layout, zero blocks, or a count of wrapped
  // tensors the layout does not have; errors of registration or allocation otherwise.
  static Result<std::unique_ptr<KvPool>> create(Agent& agent, const KvPoolSpec& spec);
  // The layout a pool of `spec` will have, before any memory exists (its errors are
  // create()'s for the same spec).
  static Result<PoolLayout> layoutOf(const KvPoolSpec& spec);
  // The name of the region holding tensor `tensor`: "kv.t<tensor>".
  static std::string regionName(std::uint32_t tensor);
  ~KvPool();
  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  const PoolLayout& layout() const { return layout_; }
  const SegmentOrder& order() const { return order_; }
  const KvPoolInfo& info() const { return info_; }
  PoolDescription description() const;

  // The bytes of one whole segment (host pools only).
  Result<std::span<std::byte>> segment(std::uint64_t block, std::uint32_t layer,
                                       std::uint32_t kv) const;
  // Copies `bytes` into one whole segment, or the segment out into `out`: a memcpy for host
  // pools, the engine's copy engine for CUDA pools (Engine::copyIntoRegion), synchronous and
  // bounded by `deadline` (TIMED_OUT). INVALID_ARGUMENT for a segment outside the pool or a
  // span that is not exactly one segment long.
  Status writeSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                      std::span<const std::byte> bytes, Deadline deadline) const;
  Status readSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                     std::span<std::byte> out, Deadline deadline) const;
  // Many whole segments at once: segment refs[i] <-> bytes [i * segmentBytes, +segmentBytes)
  // of one host span, which must be exactly refs.size() segments long. The same copies as
  // writeSegment and readSegment, submitted together (CUDA pools: one copy-engine round trip
  // for the lot). Nothing is copied when a ref is outside the pool (INVALID_ARGUMENT).
  Status writeSegments(std::span<const KvSegmentRef> refs, std::span<const std::byte> bytes,
                       Deadline deadline) const;
  Status readSegments(std::span<const KvSegmentRef> refs, std::span<std::byte> out,
                      Deadline deadline) const;
  // Every segment of the pool as local ranges, in order() (for a prepared list).
  std::vector<MemoryRange> allSegmentRanges() const;
  // Every segment of a peer's pool as ranges in the peer's regions, in its order.
  static std::vector<MemoryRange> allSegmentRanges(const PoolDescription& remote);

 private:
  KvPool(Agent& agent, PoolLayout layout, KvPoolSpec spec);
  // The region range of one whole segment, checked against the pool and `length`.
  Result<MemoryRange> segmentRange(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                                   std::size_t length) const;
  Status copySegments(std::span<const KvSegmentRef> refs, std::byte* host, std::size_t bytes,
                      bool into, Deadline deadline) const;

  Agent& agent_;
  PoolLayout layout_;
  SegmentOrder order_;
  KvPoolSpec spec_;
  KvPoolInfo info_;
  std::vector<std::byte*> bases_;  // per tensor
  std::vector<RegionId> regions_;  // per tensor
};

}  // namespace kvx::kv
