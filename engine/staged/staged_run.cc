#include "engine/staged/staged_run.h"

namespace kvx::engine {

Result<std::unique_ptr<StagedRun>> StagedRun::create(StagingService& service,
                                                     const TransferPlan& plan, TransferOp op,
                                                     std::shared_ptr<PeerLink> link,
                                                     std::vector<const RemoteKey*> keys,
                                                     std::function<void()> notify) {
  KVX_ASSIGN_OR_RETURN(gpu::CopyEngine * copies, service.copyEngine(plan.stagedDevice));
  KVX_ASSIGN_OR_RETURN(std::unique_ptr<StagingLease> lease, service.acquire());
  std::unique_ptr<StagedRun> run(new StagedRun(service, plan, op, *copies, std::move(lease)));
  run->wire_ =
      std::make_unique<StagedRmaWire>(std::move(link), plan.stagedOps, std::move(keys),
                                      op == TransferOp::kWrite, *run->lease_, std::move(notify));
  return run;
}

StagedRun::StagedRun(StagingService& service, const TransferPlan& plan, TransferOp op,
                     gpu::CopyEngine& copies, std::unique_ptr<StagingLease> lease)
    : service_(service), plan_(plan), op_(op), copies_(copies), lease_(std::move(lease)) {}

StagedRun::~StagedRun() {
  // The move reported (or never started): its pipeline no longer touches the wire or buffers.
  wire_.reset();
  service_.release(std::move(lease_));
}

Status StagedRun::begin(std::function<void(Status)> done) {
  gpu::StagedMoveSpec spec;
  spec.direction = op_ == TransferOp::kWrite ? gpu::StagedDirection::kDeviceToWire
                                             : gpu::StagedDirection::kWireToDevice;
  spec.subject = describeStagedSource(plan_);
  spec.pieces.reserve(plan_.stagedOps.size());
  for (const PlannedOp& op : plan_.stagedOps) {
    spec.pieces.push_back(gpu::DevicePiece{op.local, static_cast<std::size_t>(op.length)});
  }
  KVX_ASSIGN_OR_RETURN(pipeline_, gpu::StagedPipeline::start(std::move(spec), lease_->pool, copies_,
                                                             *wire_, std::move(done)));
  return Status::ok();
}

void StagedRun::cancel() {
  if (pipeline_ != nullptr) pipeline_->cancel();
}

}  // namespace kvx::engine
