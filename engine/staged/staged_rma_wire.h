#pragma once

// StagedRmaWire: the StagedWire of one staged transfer start, over the transfer's peer link.
// The move's bytes are the transfer's staged operations laid end to end; a chunk at byte
// `offset` of the move is scattered (sending: puts from the staging buffer) or gathered
// (receiving: gets into it) over the operations it intersects, one RMA operation each,
// posted as one batch.
//
// A chunk's RMA completions arrive in the transport's completion context, where the pipeline
// must not run (it would post again under the transport's lock). So the chunk's outcome is
// queued and `notify` is called (it must only flag the owner and wake its progress, and may
// run after the wire is gone: it must not need the wire or its owner to be alive); the owner
// then calls deliverCompleted() from a thread that holds no transport lock, which hands the
// outcomes to the pipeline. `notify` is also called after each chunk is posted, which may
// happen on a copy engine's thread, to wake the progress that its operations need.
//
// Thread safety: postWire() and deliverCompleted() may be called from any thread.
// Lifetime: REQUIRES the planned operations, the lease's buffers and registrations outlive
// the wire; the wire keeps the link (and so the keys unpacked on it) alive.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/gpu/staged_wire.h"
#include "engine/peer/peer_link.h"
#include "engine/staged/staging_service.h"
#include "engine/transfer/transfer_plan.h"
#include "sync/mutex.h"

namespace kvx::engine {

class StagedRmaWire final : public gpu::StagedWire {
 public:
  // `keys` are the remote keys by remote slot of the plan, unpacked on `link`.
  StagedRmaWire(std::shared_ptr<PeerLink> link, std::span<const PlannedOp> ops,
                std::vector<const RemoteKey*> keys, bool write, const StagingLease& lease,
                std::function<void()> notify);
  ~StagedRmaWire();

  StagedRmaWire(const StagedRmaWire&) = delete;
  StagedRmaWire& operator=(const StagedRmaWire&) = delete;

  void postWire(std::byte* staging, std::uint64_t offset, std::size_t length,
                gpu::WireCallback done) override;

  // Hands the outcomes of completed chunks to their callbacks; true if there were any.
  bool deliverCompleted();

 private:
  struct Chunk;
  struct Outcome {
    gpu::WireCallback done;
    Status status;
  };
  void completed(gpu::WireCallback done, Status status);

  const std::shared_ptr<PeerLink> link_;
  const std::span<const PlannedOp> ops_;
  const std::vector<const RemoteKey*> keys_;
  const bool write_;
  const StagingLease& lease_;
  const std::function<void()> notify_;
  std::vector<std::uint64_t> starts_;  // byte of the move where each operation starts

  sync::Mutex mutex_;  // leaf lock, taken in completion context
  std::deque<Outcome> outcomes_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine
