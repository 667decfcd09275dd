#pragma once

// StagingWindow: the target side's host memory for target-side staging. `slots` pinned host
// buffers of `slotBytes` each, back to back in one host region of the transport, whose key
// goes into this agent's metadata. Peers whose transport cannot reach this agent's GPU
// regions put chunks into a slot, or get them from one, and this agent's copy engine moves
// them between the slot and the device (WindowServer).
//
// The region is allocated by the transport and then pinned by the GPU runtime, so that peers'
// puts and gets are one-sided where the transport can make them so: UCX over shared memory
// maps memory it allocated into its peers, but emulates RMA on memory it only registered,
// with this side's progress thread copying every byte (UCX-NOTES.md). Where the transport
// cannot allocate or the runtime cannot pin that memory, the window is the runtime's pinned
// memory, registered (emulated RMA on shared memory), and layout() says why.
//
// One window serves every peer: a slot is lent to one request of one peer at a time, and the
// table below records who holds it, so that a request naming a slot it does not hold is
// refused. Bookkeeping only: the protocol is WindowServer's.
//
// Thread safety: not thread-safe; WindowServer serialises every call. Lifetime: owned by the
// engine; REQUIRES: the transport outlives it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/gpu/gpu_runtime.h"
#include "engine/gpu/staging_pool.h"
#include "engine/memory/local_region.h"
#include "engine/peer/peer_metadata.h"
#include "engine/staged/staging_message.h"
#include "engine/transport/transport.h"

namespace kvx::engine {

class StagingWindow {
 public:
  // One range of a lent slot: bytes of `region` at `offset`, packed after the ranges before
  // it in the slot.
  struct LeaseRange {
    std::shared_ptr<LocalRegion> region;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
  };
  // What one lent slot is for.
  struct Lease {
    std::string peer;
    std::uint64_t requestId = 0;
    StagingOp op = StagingOp::kWrite;  // kWrite or kRead
    std::vector<LeaseRange> ranges;    // in slot order
    bool copying = false;              // the copy engine is using the slot
    std::size_t copiesLeft = 0;        // while copying: copies not yet completed
    Status copyStatus;                 // while copying: the first copy's failure
  };

  // INVALID_ARGUMENT for zero slots or bytes; the runtime's or the transport's error when
  // neither layout can be made.
  static Result<std::unique_ptr<StagingWindow>> create(Transport& transport, gpu::GpuRuntime& gpu,
                                                       std::uint32_t slots,
                                                       std::uint64_t slotBytes);
  ~StagingWindow();

  StagingWindow(const StagingWindow&) = delete;
  StagingWindow& operator=(const StagingWindow&) = delete;

  StagingWindowMetadata metadata() const;
  // "allocated by the transport, pinned", "allocated and pinned by the transport" (a UCX
  // built with CUDA pins what it allocates), or why the window is registered memory instead.
  const std::string& layout() const { return layout_; }
  std::uint32_t slots() const { return static_cast<std::uint32_t>(leases_.size()); }
  std::uint64_t slotBytes() const { return slotBytes_; }
  std::byte* slot(std::uint32_t index) const { return base_ + index * slotBytes_; }

  // A free slot lent for `lease`, or none when all are lent.
  std::optional<std::uint32_t> lend(Lease lease);
  // The lease of `slot` if `peer` holds it for `requestId`; null otherwise.
  Lease* held(std::uint32_t slot, const std::string& peer, std::uint64_t requestId);
  // The lease of `slot`, whoever holds it; null when the slot is free or out of range.
  Lease* at(std::uint32_t slot);
  void giveBack(std::uint32_t slot);
  // Gives back every slot `peer` holds that no copy is using; returns how many.
  std::size_t giveBackAllOf(const std::string& peer);
  std::size_t lent() const;

 private:
  StagingWindow(std::uint32_t slots, std::uint64_t slotBytes);
  // The transport's memory, pinned: the first choice.
  Status allocateFromTransport(Transport& transport, gpu::GpuRuntime& gpu);
  // The runtime's pinned memory, registered with the transport.
  Status allocatePinned(Transport& transport, gpu::GpuRuntime& gpu);

  std::byte* base_ = nullptr;
  std::uint64_t slotBytes_;
  std::string layout_;
  std::unique_ptr<TransportMemory> registration_;  // owns the memory in the first layout
  gpu::GpuRuntime* pinnedBy_ = nullptr;  // first layout, when it pinned: unpins the memory
  std::shared_ptr<gpu::StagingAllocator> allocator_;  // second layout: frees the memory
  std::vector<std::optional<Lease>> leases_;          // by slot; empty: free
};

}  // namespace kvx::engine
