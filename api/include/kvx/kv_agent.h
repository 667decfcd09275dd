#pragma once

// kvx::KvAgent: a prefill or decode agent of a disaggregated server. It owns a kvx::Agent
// (the byte mover), one KV-cache pool registered with it, and the request life cycle:
//
//   prefill                                   decode
//   submit(id, blocks) --- place ----------->  allocates blocks (contiguous when it can),
//                      <-- placed (blocks) ---  reserves them under a lease
//   PUSH: writes each layer (or all) -------->  "layer i in place" / "complete"
//   PULL: "layer i ready" ------------------->  reads it
//                      <-- confirmed --------  complete: nextArrival() returns it
//   frees the source blocks                    consume(id), release(id): blocks freed
//
// Thread safety: every member may be called from any thread. Internally one service thread
// owns all request state; calls hand work to it and wait (with a deadline) for the answer.
// Errors: Status / Result; nothing throws. Every wait has a deadline.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvx/agent.h"
#include "kvx/kv_types.h"
#include "kvx/result.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

class KvAgent final {
 public:
  // Creates the agent, its pool (allocated or wrapped) and starts listening.
  // INVALID_ARGUMENT for an unknown shape or layout, or wrapped tensors that do not match
  // the layout (count), naming what was expected.
  static Result<std::unique_ptr<KvAgent>> create(KvAgentOptions options);
  // shutdown() with a short deadline (2 s), then releases everything. Requests that only the
  // application could take further end at once instead of waiting for it: one handed out by
  // nextArrival() and not released is released, a layer-wise request still waiting for
  // layerReady() fails with CANCELLED (its peer told). The deadline is for the rest.
  ~KvAgent();
  KvAgent(const KvAgent&) = delete;
  KvAgent& operator=(const KvAgent&) = delete;

  // Stops taking new requests; lets in-flight requests finish until `deadline`, then fails
  // the rest with CANCELLED(`reason`) (telling their peers). Idempotent.
  Status shutdown(Deadline deadline, const std::string& reason);
  // Decode: the operator's word that the prefill agent `peer` (empty: every lost one not
  // joined now), lost, will write no more: the blocks held for it without proof that it
  // stopped (KvPoolUsage::heldBlocks; a process that neither rejoins nor ends) go back to the
  // pool (`kvx agent`: SIGUSR1). Returns how many blocks waited for it.
  // The risk is the operator's: if that agent still runs and resumes, its late writes land
  // in blocks other requests have by then. NOT_FOUND for a peer joined now;
  // FAILED_PRECONDITION on a prefill agent.
  Result<std::uint64_t> giveBackHeldBlocks(const std::string& peer);
  // The application is about to destroy the agent: every thread waiting in nextArrival(),
  // waitLayer() or wait(), now or later, returns CANCELLED at once ("the agent is
  // closing") instead of sleeping out its deadline. Requests go on; the destructor then
  // ends them as it says.
  void cancelWaits();

  const std::string& name() const;
  KvRole role() const;
  std::string listenAddress() const;
  Agent& agent();  // the underlying byte mover (diagnostics, advanced use)

  // ---- peers ----
  // Connects to another agent (prefill: a decode agent) and exchanges pool descriptions;
  // an incompatible pool (shape or layout) is refused with both descriptions in the error.
  // Pools that differ only in KV heads per block (tensor-parallel ranks of different TP
  // sizes) connect, and exchange sliced requests only (KvRequestSpec::slice).
  Result<std::string> connect(const std::string& address, Deadline deadline);
  std::vector<KvPeerStatus> peers() const;

  // ---- the pool ----
  const KvPoolInfo& pool() const;
  KvPoolUsage usage() const;
  // The bytes of segment (block, layer, K=0/V=1) for host pools; for layouts where it is
  // not contiguous (none today) or for CUDA pools: FAILED_PRECONDITION.
  Result<std::span<std::byte>> segment(std::uint64_t block, std::uint32_t layer,
                                       std::uint32_t kv) const;
  // Copies `bytes` (exactly one segment's length) into segment (block, layer, kv), or the
  // segment out into `out`, for host and CUDA pools alike (CUDA: through the GPU runtime's
  // copy engine, synchronously, bounded by `deadline`). For filling and checking KV content
  // from the host (tests, benchmarks); not a data path. INVALID_ARGUMENT for a block, layer
  // or kv out of range or a span of the wrong length; TIMED_OUT when a CUDA copy is not done
  // by `deadline` (`out` is then left alone, and a late copy lands from a buffer of its own).
  Status writeSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                      std::span<const std::byte> bytes, Deadline deadline);
  Status readSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                     std::span<std::byte> out, Deadline deadline) const;
  // Many segments at once: refs[i] <-> bytes [i * segmentBytes, +segmentBytes) of one span of
  // exactly refs.size() segments; the same copies, submitted together (for CUDA pools one
  // copy-engine round trip for the lot instead of one per segment). Nothing is copied when a
  // ref is out of range (INVALID_ARGUMENT naming it).
  Status writeSegments(std::span<const KvSegmentRef> refs, std::span<const std::byte> bytes,
                       Deadline deadline);
  Status readSegments(std::span<const KvSegmentRef> refs, std::span<std::byte> out,
                      Deadline deadline) const;
  // Blocks for a new prompt (prefill) from the pool's allocator, contiguous when possible.
  Result<std::vector<std::uint64_t>> allocateBlocks(std::uint64_t count);
  Status freeBlocks(std::span<const std::uint64_t> blocks);

  // ---- prefill side ----
  // Queues the request for placement. ALREADY_EXISTS for an id that is live;
  // INVALID_ARGUMENT for blocks that do not match the tokens or are not allocated, or a
  // slice without a destination or outside this pool's heads;
  // RESOURCE_EXHAUSTED when the placement queue is full; errors on the decode agent's side
  // reach the request's status.
  Status submit(const KvRequestSpec& request);
  // Layer-wise requests: the data of `layer` may move now.
  Status layerReady(const std::string& id, std::uint32_t layer);
  Status cancel(const std::string& id);
  // NOT_FOUND for an id never submitted, or forgotten (the last 65,536 finished are kept).
  Result<KvRequestStatus> status(const std::string& id) const;
  // Waits until the request is released (OK) or failed (its Status), or the deadline.
  Result<KvRequestStatus> wait(const std::string& id, Deadline deadline);

  // ---- decode side ----
  // The next request whose data is complete, oldest first; TIMED_OUT at the deadline. A
  // gathered request (KvSlice::sources > 1) arrives once, when every source's part is in.
  // After shutdown(), once the arrivals already in are taken: CANCELLED at once.
  Result<KvArrival> nextArrival(Deadline deadline);
  // Waits until `layer` of request `id` is in place (the request may not be known yet).
  Status waitLayer(const std::string& id, std::uint32_t layer, Deadline deadline);
  // The server took the data: the lease stops; the blocks stay the server's until release.
  Status consume(const std::string& id);
  // Returns the request's blocks to the pool (or to the prefix cache).
  Status release(const std::string& id);
  // Drops every unpinned prefix-cache entry back into the free pool.
  Status dropPrefixCache();

 private:
  struct __attribute__((visibility("hidden"))) Impl;  // kvx's own: not exported
  explicit KvAgent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvx
#pragma GCC visibility pop
