#pragma once

// StagingWindow: the target side's host memory for target-side staging. `slots` pinned host
// buffers of `slotBytes` each, allocated back to back and registered with the transport as
// one host region, whose key goes into this agent's metadata. Peers whose transport cannot
// reach this agent's GPU regions put chunks into a slot, or get them from one, and this
// agent's copy engine moves them between the slot and the device (WindowServer).
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

  // INVALID_ARGUMENT for zero slots or bytes; the allocator's or the transport's error.
  static Result<std::unique_ptr<StagingWindow>> create(
      Transport& transport, std::shared_ptr<gpu::StagingAllocator> memory, std::uint32_t slots,
      std::uint64_t slotBytes);
  ~StagingWindow();

  StagingWindow(const StagingWindow&) = delete;
  StagingWindow& operator=(const StagingWindow&) = delete;

  StagingWindowMetadata metadata() const;
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
  StagingWindow(std::shared_ptr<gpu::StagingAllocator> memory, std::byte* base, std::uint32_t slots,
                std::uint64_t slotBytes);

  std::shared_ptr<gpu::StagingAllocator> memory_;
  std::byte* base_;
  std::uint64_t slotBytes_;
  std::unique_ptr<TransportMemory> registration_;
  std::vector<std::optional<Lease>> leases_;  // by slot; empty: free
};

}  // namespace kvx::engine
