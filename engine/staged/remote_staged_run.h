#pragma once

// RemoteStagedRun: the share of one transfer start that goes through the peer's staging
// window (RemoteStagedWire), for segments whose remote side is the peer's GPU memory:
//   from memory this side's transport reaches (plan.remoteStagedOps): cut into pieces of at
//     most one window slot, at most one piece per slot in flight;
//   from this side's GPU memory too (plan.bothStagedOps): a StagedPipeline moves it through a
//     lent set of this side's staging buffers, and each of its chunks travels on through the
//     window, as one piece per slot-sized part:
//       WRITE: device -> local buffer -> window slot -> peer's device
//       READ:  peer's device -> window slot -> local buffer -> device
// It reports (StagedShare) when both parts have, i.e. when every piece is confirmed: for a
// WRITE, the bytes are in the peer's device memory.
//
// Threads and guarantees: those of StagedShare. Lifetime: REQUIRES the plan, the staging
// service and the client outlive the run.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/gpu/staged_pipeline.h"
#include "engine/staged/remote_staged_wire.h"
#include "engine/staged/staging_client.h"
#include "engine/staged/staging_service.h"
#include "engine/transfer/staged_share.h"
#include "engine/transfer/transfer_plan.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

// What a transfer needs to stage, on either side.
struct StagingContext {
  StagingService* service = nullptr;
  StagingClient* client = nullptr;
  std::vector<std::uint8_t> requestHeader;  // a kStagingRequest header naming this agent
  std::chrono::milliseconds replyTimeout{5000};
};

class RemoteStagedRun final : public StagedShare {
 public:
  // REQUIRES: `plan` has remote staged or both-staged operations and `peer` a window.
  static Result<std::unique_ptr<RemoteStagedRun>> create(const StagingContext& context,
                                                         const TransferPlan& plan, TransferOp op,
                                                         std::shared_ptr<RemotePeer> peer,
                                                         std::shared_ptr<PeerLink> link,
                                                         std::function<void()> notify);
  ~RemoteStagedRun() override;

  RemoteStagedRun(const RemoteStagedRun&) = delete;
  RemoteStagedRun& operator=(const RemoteStagedRun&) = delete;

  Status begin(std::function<void(Status)> done) override;
  void cancel() override;
  bool deliverCompleted() override { return wire_->deliverCompleted(); }

 private:
  class ChunkWire;
  RemoteStagedRun(const StagingContext& context, const TransferPlan& plan, TransferOp op);

  // Posts host pieces while slots allow.
  void feed();
  void hostPieceDone(Status status);
  void partDone(Status status);

  const StagingContext& context_;
  const TransferPlan& plan_;
  const TransferOp op_;
  std::uint32_t wireId_ = 0;
  std::shared_ptr<RemoteStagedWire> wire_;
  // The both-staged part, when the plan has one.
  gpu::CopyEngine* copies_ = nullptr;
  std::unique_ptr<StagingLease> lease_;
  std::unique_ptr<ChunkWire> chunkWire_;
  std::shared_ptr<gpu::StagedPipeline> pipeline_ KVX_GUARDED_BY(mutex_);

  sync::Mutex mutex_;  // leaf lock: never held while calling the wire, pipeline or `done_`
  std::function<void(Status)> done_ KVX_GUARDED_BY(mutex_);
  // Host part: the operation to cut next, and the offset into it.
  std::size_t nextOp_ KVX_GUARDED_BY(mutex_) = 0;
  std::uint64_t nextOffset_ KVX_GUARDED_BY(mutex_) = 0;
  std::size_t hostInFlight_ KVX_GUARDED_BY(mutex_) = 0;
  std::size_t partsLeft_ KVX_GUARDED_BY(mutex_) = 0;  // parts not yet reported
  bool hostReported_ KVX_GUARDED_BY(mutex_) = false;
  bool cancelled_ KVX_GUARDED_BY(mutex_) = false;
  Status error_ KVX_GUARDED_BY(mutex_);  // the first error of either part
};

}  // namespace kvx::engine
