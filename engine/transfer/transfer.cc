#include "engine/transfer/transfer.h"

#include <algorithm>
#include <array>

namespace kvx::engine {
namespace {

// The transfer whose operations this thread is posting right now (in postOpsLocked), and
// how many of them completed inline, before their post returned. Those need no attention
// call (the posting loop sees the freed window and advance() checks the phase after it),
// and they are taken off inFlight_ once per batch: a locked instruction per operation
// waits for the copy's stores to drain, which cost about 100 ns per 4 KiB put here.
thread_local const Transfer* tPosting = nullptr;
thread_local std::uint32_t tCompletedInline = 0;

// Operations handed to the endpoint per call (one transport lock each).
constexpr std::size_t kPostBatch = 64;

}  // namespace

Transfer::Transfer(TransferId id, std::shared_ptr<RemotePeer> peer, TransferOp op,
                   TransferPlan plan, std::vector<std::uint8_t> notificationHeader,
                   std::optional<std::string> notification, std::uint32_t maxOpsInFlight,
                   TransferListener& listener, StagingService* staging)
    : id_(id),
      peer_(std::move(peer)),
      op_(op),
      plan_(std::move(plan)),
      notificationHeader_(std::move(notificationHeader)),
      notification_(std::move(notification)),
      maxOpsInFlight_(maxOpsInFlight == 0 ? 1 : maxOpsInFlight),
      listener_(listener),
      staging_(staging) {
  opSink_.transfer = flushSink_.transfer = messageSink_.transfer = this;
  opSink_.kind = Sink::Kind::kOp;
  flushSink_.kind = Sink::Kind::kFlush;
  messageSink_.kind = Sink::Kind::kMessage;
}

void Transfer::Sink::onComplete(Status status) { transfer->onComplete(kind, std::move(status)); }

TransferStatus Transfer::status() const {
  TransferStatus out;
  out.state = state_.load();
  if (out.state == TransferState::kFailed) {
    std::lock_guard lock(errorMutex_);
    out.status = error_;
  }
  return out;
}

TransferStats Transfer::stats() const {
  return TransferStats{plan_.descriptors, plan_.ops.size() + plan_.stagedOps.size(), plan_.bytes,
                       plan_.stagedOps.size(), plan_.stagedBytes};
}

void Transfer::recordError(Status status) {
  std::lock_guard lock(errorMutex_);
  if (error_.isOk()) error_ = std::move(status);
  errored_.store(true);
}

void Transfer::onComplete(Sink::Kind kind, Status status) {
  if (kind == Sink::Kind::kOp && tPosting == this && status.isOk()) {
    ++tCompletedInline;
    return;
  }
  // Take a reference before the counter drops: once it reaches zero another thread may
  // finish the transfer and its owner may release it.
  std::shared_ptr<Transfer> self = shared_from_this();
  if (!status.isOk()) recordError(explain(std::move(status)));
  if (kind == Sink::Kind::kFlush) flushDone_.store(true);
  if (kind == Sink::Kind::kMessage) messageDone_.store(true);
  inFlight_.fetch_sub(1);
  listener_.needsAttention(std::move(self));
}

Status Transfer::explain(Status status) const {
  // An operation refused because the link was closed under it by the peer's failure failed
  // because of that failure: report the cause, not the closed endpoint.
  const Status peerFailure = peer_->failure();
  return (peerFailure.isOk() ? std::move(status) : peerFailure)
      .withContext("transfer " + std::to_string(id_.value) + " to '" + peer_->name() + "'");
}

Status Transfer::refreshKeys() {
  auto link = peer_->link();
  if (!link.isOk()) return link.status();
  if (link_ == *link && keysEpoch_ == link_->epoch()) return Status::ok();
  link_ = std::move(link).value();
  keys_.assign(plan_.remoteRegions.size(), nullptr);
  for (std::size_t slot = 0; slot < plan_.remoteRegions.size(); ++slot) {
    auto key = link_->key(plan_.remoteRegions[slot]);
    if (!key.isOk()) return key.status();
    keys_[slot] = *key;
  }
  keysEpoch_ = link_->epoch();
  return Status::ok();
}

Status Transfer::start(MemoryRegistry& registry, FinishedCallback onFinished) {
  std::unique_lock lock(mutex_);
  if (state_.load() == TransferState::kPending) {
    return failedPrecondition("transfer " + std::to_string(id_.value) + " is still pending");
  }
  for (const auto& remote : plan_.remoteRegions) {
    if (remote->removed.load()) {
      return failedPrecondition("remote region '" + remote->info.name + "' of peer '" +
                                peer_->name() + "' was deregistered by its owner");
    }
  }
  KVX_RETURN_IF_ERROR(refreshKeys());
  KVX_RETURN_IF_ERROR(registry.pin(plan_.localRegions));
  if (staged()) {
    const Status created = createStagedRunLocked();
    if (!created.isOk()) {
      registry.unpin(plan_.localRegions);
      return created;
    }
  }
  registry_ = &registry;
  {
    std::lock_guard errorLock(errorMutex_);
    error_ = Status::ok();
  }
  errored_.store(false);
  flushDone_.store(false);
  messageDone_.store(false);
  stagedDone_.store(!staged());
  stagedBegun_ = false;
  stagedCancelled_ = false;
  nextOp_ = 0;
  phase_ = Phase::kOps;
  self_ = shared_from_this();
  onFinished_ = std::move(onFinished);
  state_.store(TransferState::kPending);
  lock.unlock();
  advance();
  return Status::ok();
}

void Transfer::requestCancel(Status reason) {
  if (state_.load() != TransferState::kPending) return;
  recordError(std::move(reason));
  advance();
}

void Transfer::postOpsLocked() {
  Endpoint& endpoint = link_->endpoint();
  const bool isWrite = op_ == TransferOp::kWrite;
  std::array<RmaOp, kPostBatch> batch;
  tPosting = this;
  while (nextOp_ < plan_.ops.size() && !errored_.load()) {
    const std::uint32_t inFlight = inFlight_.load();
    if (inFlight >= maxOpsInFlight_) break;
    const std::size_t count =
        std::min<std::size_t>({kPostBatch, maxOpsInFlight_ - inFlight, plan_.ops.size() - nextOp_});
    for (std::size_t i = 0; i < count; ++i) {
      const PlannedOp& p = plan_.ops[nextOp_++];
      batch[i] = RmaOp{p.local, p.localMemory, p.remoteAddress, keys_[p.remoteSlot], p.length};
    }
    inFlight_.fetch_add(static_cast<std::uint32_t>(count));
    tCompletedInline = 0;
    endpoint.postBatch({batch.data(), count}, isWrite, &opSink_);
    if (tCompletedInline != 0) inFlight_.fetch_sub(tCompletedInline);
  }
  tPosting = nullptr;
}

void Transfer::advance() {
  if (staged()) deliverStagedCompletions();
  std::shared_ptr<Transfer> keepAlive;  // outlives the lock if finishing drops the last reference
  std::unique_lock lock(mutex_);
  if (state_.load() != TransferState::kPending) return;
  if (!errored_.load()) {
    if (phase_ == Phase::kOps) {
      if (staged()) beginStagedLocked();
      postOpsLocked();
      // The flush covers the staged puts too: they went out on the same endpoint.
      if (nextOp_ == plan_.ops.size() && stagedDone_.load() && !errored_.load()) {
        phase_ = Phase::kFlush;
        inFlight_.fetch_add(1);
        link_->endpoint().flush(&flushSink_);
      }
    }
    if (phase_ == Phase::kFlush && flushDone_.load() && !errored_.load()) {
      if (notification_) {
        phase_ = Phase::kMessage;
        inFlight_.fetch_add(1);
        const auto* payload = reinterpret_cast<const std::uint8_t*>(notification_->data());
        link_->endpoint().sendMessage(notificationHeader_, {payload, notification_->size()},
                                      &messageSink_);
      } else {
        phase_ = Phase::kEnd;
      }
    }
    if (phase_ == Phase::kMessage && messageDone_.load()) phase_ = Phase::kEnd;
  }
  if (errored_.load() && stagedBegun_ && !stagedCancelled_ && !stagedDone_.load()) {
    stagedCancelled_ = true;  // the staged move drains, then reports through onStagedDone
    stagedRun_->cancel();
  }
  const bool drained = inFlight_.load() == 0;
  if (!drained || !(errored_.load() || phase_ == Phase::kEnd)) return;
  keepAlive = finishLocked();
  FinishedCallback callback = std::move(onFinished_);
  onFinished_ = nullptr;
  const TransferStatus final = status();  // before a repost from another thread changes it
  lock.unlock();
  // The user's callback runs outside every kvx lock, so it may post, cancel or release.
  if (callback) callback(id_, final);
}

std::shared_ptr<Transfer> Transfer::finishLocked() {
  stagedRun_.reset();  // its move reported: the staging buffers go back to the service
  registry_->unpin(plan_.localRegions);
  link_.reset();
  keysEpoch_ = 0;
  state_.store(errored_.load() ? TransferState::kFailed : TransferState::kDone);
  listener_.finished(*this);
  return std::move(self_);
}

Status Transfer::createStagedRunLocked() {
  if (staging_ == nullptr) {
    return internalError("transfer " + std::to_string(id_.value) +
                         " has staged operations but no staging service");
  }
  // The wire's completions may outlive the move and even the transfer: they hold it weakly.
  std::weak_ptr<Transfer> weak = weak_from_this();
  TransferListener* listener = &listener_;
  auto notify = [weak, listener] {
    if (auto self = weak.lock()) listener->needsAttentionWoken(std::move(self));
  };
  KVX_ASSIGN_OR_RETURN(stagedRun_, StagedRun::create(*staging_, plan_, op_, link_, keys_, notify));
  return Status::ok();
}

void Transfer::beginStagedLocked() {
  if (stagedBegun_) return;
  stagedBegun_ = true;
  inFlight_.fetch_add(1);
  const Status begun =
      stagedRun_->begin([this](Status status) { onStagedDone(std::move(status)); });
  if (!begun.isOk()) {
    recordError(explain(begun));
    stagedDone_.store(true);
    inFlight_.fetch_sub(1);
  }
}

void Transfer::onStagedDone(Status status) {
  // As in onComplete: hold a reference before the count drops and the transfer may finish.
  std::shared_ptr<Transfer> self = shared_from_this();
  if (!status.isOk()) recordError(explain(std::move(status)));
  stagedDone_.store(true);
  inFlight_.fetch_sub(1);
  listener_.needsAttentionWoken(std::move(self));
}

void Transfer::deliverStagedCompletions() {
  // Outside mutex_: handing a chunk to the pipeline may post the next one, or finish it.
  std::shared_ptr<StagedRun> run;
  {
    std::lock_guard lock(mutex_);
    run = stagedRun_;
  }
  if (run) run->deliverCompleted();
}

}  // namespace kvx::engine
