#pragma once

// StagedRun: the staged share of one start of a transfer. A StagedPipeline moves the
// transfer's staged operations (local GPU memory) chunk by chunk through a lent set of
// registered staging buffers, over a StagedRmaWire on the transfer's link:
//   WRITE: device -> staging buffer (copy engine) -> put to the remote range
//   READ:  get from the remote range -> staging buffer -> device (copy engine)
// Like the pipeline, it reports its outcome only after every copy and RMA operation it
// issued has completed. Transfer owns one per start that has staged operations, and drops
// it when the start finishes; the staging buffers go back to the service then.
//
// Threads and guarantees: those of StagedShare.

#include <functional>
#include <memory>
#include <vector>

#include "engine/gpu/staged_pipeline.h"
#include "engine/staged/staged_rma_wire.h"
#include "engine/staged/staging_service.h"
#include "engine/transfer/staged_share.h"
#include "engine/transfer/transfer_plan.h"
#include "kvx/transfer.h"

namespace kvx::engine {

class StagedRun final : public StagedShare {
 public:
  // Lends staging buffers for `plan`'s staged operations. `keys` are the plan's remote keys
  // unpacked on `link`; `notify` is the wire's (see StagedRmaWire). REQUIRES: `plan`
  // outlives the run and has staged operations.
  static Result<std::unique_ptr<StagedRun>> create(StagingService& service,
                                                   const TransferPlan& plan, TransferOp op,
                                                   std::shared_ptr<PeerLink> link,
                                                   std::vector<const RemoteKey*> keys,
                                                   std::function<void()> notify);
  ~StagedRun() override;

  StagedRun(const StagedRun&) = delete;
  StagedRun& operator=(const StagedRun&) = delete;

  // Starts the move; `done` fires exactly once with its outcome, from any thread but never
  // in transport completion context, possibly before begin() returns. An error returned here
  // means nothing was started and `done` will not fire.
  Status begin(std::function<void(Status)> done) override;
  // Stops the move (its outcome becomes CANCELLED unless it already failed or finished).
  void cancel() override;
  // Hands completed RMA chunks to the pipeline; see StagedRmaWire::deliverCompleted.
  bool deliverCompleted() override { return wire_->deliverCompleted(); }

 private:
  StagedRun(StagingService& service, const TransferPlan& plan, TransferOp op,
            gpu::CopyEngine& copies, std::unique_ptr<StagingLease> lease);

  StagingService& service_;
  const TransferPlan& plan_;
  const TransferOp op_;
  gpu::CopyEngine& copies_;
  std::unique_ptr<StagingLease> lease_;
  std::unique_ptr<StagedRmaWire> wire_;
  std::shared_ptr<gpu::StagedPipeline> pipeline_;
};

}  // namespace kvx::engine
