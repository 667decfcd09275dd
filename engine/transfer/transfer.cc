#include "engine/transfer/transfer.h"

#include <spdlog/spdlog.h>

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

// What one advance() copies at most before it hands the transfer back to the progress
// thread's queue (TransferListener::needsAttentionWoken) and returns. Where puts complete
// inline (shared memory into pools UCX mapped: the copy runs inside ucp_put_nbx), posting is
// the copy itself, so without a bound post() would copy a whole request (6 GiB, 0.4 s)
// before returning, and a request posted next, however small, would wait for all of it.
// Taking turns of this size through the queue shares the link between the transfers in
// flight round-robin (about 1 ms per turn at 15 GB/s) and keeps post() short. Only bytes
// that completed inline, or that the endpoint copied when posted (Endpoint::copiesWhenPosted),
// count: operations that complete later (UCX over tcp, a GPU's copy engine through cuda_ipc)
// are bounded by the window below instead; handing the turn back for them cost a thread
// hand-over per 16 MiB and bought nothing.
constexpr std::uint64_t kTurnBytes = 16ull << 20;
constexpr std::size_t kTurnOps = 4096;

// Bytes one transfer keeps in flight at most, as a window of operations of the plan's
// average size. Where operations complete later (tcp: UCX queues them on the endpoint in
// order), a window of 256 coalesced 8 MiB operations put 2 GiB ahead of anything posted to
// the same peer afterwards; 64 MiB is 13 ms of tcp here, and still hides the round trip.
constexpr std::uint64_t kInFlightBytes = 64ull << 20;

std::uint32_t windowFor(std::uint32_t maxOpsInFlight, const TransferPlan& plan) {
  const std::uint32_t window = maxOpsInFlight == 0 ? 1 : maxOpsInFlight;
  if (plan.ops.empty()) return window;
  std::uint64_t directBytes = 0;
  for (const PlannedOp& op : plan.ops) directBytes += op.length;
  const std::uint64_t average = std::max<std::uint64_t>(1, directBytes / plan.ops.size());
  const std::uint64_t byBytes = std::max<std::uint64_t>(1, kInFlightBytes / average);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(window, byBytes));
}

}  // namespace

Transfer::Transfer(TransferId id, std::shared_ptr<RemotePeer> peer, TransferOp op,
                   TransferPlan plan, std::vector<std::uint8_t> notificationHeader,
                   std::optional<std::string> notification, std::uint32_t maxOpsInFlight,
                   TransferListener& listener, StagingAccess* staging)
    : id_(id),
      peer_(std::move(peer)),
      op_(op),
      plan_(std::move(plan)),
      notificationHeader_(std::move(notificationHeader)),
      notification_(std::move(notification)),
      maxOpsInFlight_(windowFor(maxOpsInFlight, plan_)),
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
    sync::MutexLock lock(errorMutex_);
    out.status = error_;
  }
  return out;
}

TransferStats Transfer::stats() const {
  TransferStats stats;
  stats.descriptors = plan_.descriptors;
  stats.operations = plan_.ops.size() + plan_.stagedOps.size() + plan_.remoteStagedOps.size() +
                     plan_.bothStagedOps.size();
  stats.bytes = plan_.bytes;
  stats.stagedOperations = plan_.stagedOps.size() + plan_.bothStagedOps.size();
  stats.stagedBytes = plan_.stagedBytes;
  stats.remoteStagedOperations = plan_.remoteStagedOps.size() + plan_.bothStagedOps.size();
  stats.remoteStagedBytes = plan_.remoteStagedBytes;
  return stats;
}

void Transfer::recordError(Status status) {
  sync::MutexLock lock(errorMutex_);
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
  if (!status.isOk()) {
    // A notification our reset cancelled is sent again by the peer's link (LinkEndpoint):
    // only operations and flushes are posted again here.
    if (kind != Sink::Kind::kMessage && !staged() && linkWasReset()) {
      relink_.store(true);
    } else {
      recordError(explain(std::move(status)));
    }
  }
  if (kind == Sink::Kind::kFlush) flushDone_.store(true);
  if (kind == Sink::Kind::kMessage) messageDone_.store(true);
  inFlight_.fetch_sub(1);
  listener_.needsAttention(std::move(self));
}

Status Transfer::explain(Status status) const {
  // An operation refused because the link was closed under it by the peer's failure failed
  // because of that failure: report the cause, not the closed endpoint.
  // One that our own reset closed under it failed because of that reset: say so.
  const Status peerFailure = peer_->failure();
  if (!peerFailure.isOk()) {
    status = peerFailure;
  } else if (linkWasReset()) {
    status =
        transportError("this agent reset its data path to '" + peer_->name() + "' (" +
                       postingLink_.load()->resetReason() +
                       ") while operations of this transfer were in flight: " + status.message());
  }
  return status.withContext(describe());
}

std::string Transfer::describe() const {
  return "transfer " + std::to_string(id_.value) + " to '" + peer_->name() + "'";
}

bool Transfer::linkWasReset() const {
  const PeerLink* link = postingLink_.load();
  return link != nullptr && link->wasReset();
}

Status Transfer::refreshKeys() {
  auto link = peer_->awaitLink();
  if (!link.isOk()) return link.status();
  return useLink(std::move(link).value());
}

Status Transfer::useLink(std::shared_ptr<PeerLink> link) {
  if (link_ == link && keysEpoch_ == link_->epoch()) return Status::ok();
  link_ = std::move(link);
  postingLink_.store(link_.get());
  keys_.assign(plan_.remoteRegions.size(), nullptr);
  for (std::size_t slot = 0; slot < plan_.remoteRegions.size(); ++slot) {
    // A region published without a key is reached through the peer's staging window only.
    if (plan_.remoteRegions[slot]->packedKey.empty()) continue;
    auto key = link_->key(plan_.remoteRegions[slot]);
    if (!key.isOk()) return key.status();
    keys_[slot] = *key;
  }
  keysEpoch_ = link_->epoch();
  return Status::ok();
}

Status Transfer::start(MemoryRegistry& registry, FinishedCallback onFinished) {
  sync::UniqueLock lock(mutex_);
  if (state_.load() == TransferState::kPending) {
    return failedPrecondition("transfer " + std::to_string(id_.value) + " is still pending");
  }
  for (const auto& remote : plan_.remoteRegions) {
    if (remote->removed.load()) {
      return failedPrecondition("remote region '" + remote->info.name + "' of peer '" +
                                peer_->name() + "' was deregistered by its owner");
    }
  }
  // While a reset of ours opens the peer's next link, the transfer waits for it without
  // holding up the caller: advance() attaches the link once it is up. A staged transfer
  // builds its runs on the link, so it waits here (at most the peer's reopen wait).
  bool awaitingLink = false;
  if (staged()) {
    KVX_RETURN_IF_ERROR(refreshKeys());
  } else {
    auto link = peer_->linkWhenReady(wakeWhenLinkReady());
    if (!link.isOk()) return link.status();
    if (*link != nullptr) {
      KVX_RETURN_IF_ERROR(useLink(std::move(link).value()));
    } else {
      awaitingLink = true;
    }
  }
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
    sync::MutexLock errorLock(errorMutex_);
    error_ = Status::ok();
  }
  errored_.store(false);
  relink_.store(awaitingLink);
  relinks_ = 0;
  flushDone_.store(false);
  messageDone_.store(false);
  stagedLeft_.store(stagedShares_.size());
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

bool Transfer::postOpsLocked() {
  Endpoint& endpoint = link_->endpoint();
  const bool isWrite = op_ == TransferOp::kWrite;
  std::array<RmaOp, kPostBatch> batch;
  std::uint64_t turnBytes = 0;
  std::size_t turnOps = 0;
  const bool copiesWhenPosted = endpoint.copiesWhenPosted();
  tPosting = this;
  while (nextOp_ < plan_.ops.size() && !errored_.load() && !relink_.load()) {
    if (turnBytes >= kTurnBytes || turnOps >= kTurnOps) {
      tPosting = nullptr;
      return true;
    }
    const std::uint32_t inFlight = inFlight_.load();
    if (inFlight >= maxOpsInFlight_) break;
    std::size_t count = std::min<std::size_t>(
        {kPostBatch, maxOpsInFlight_ - inFlight, plan_.ops.size() - nextOp_, kTurnOps - turnOps});
    std::size_t i = 0;
    std::uint64_t batchBytes = 0;
    for (; i < count && (i == 0 || turnBytes + batchBytes < kTurnBytes); ++i) {
      const PlannedOp& p = plan_.ops[nextOp_++];
      batch[i] = RmaOp{p.local, p.localMemory, p.remoteAddress, keys_[p.remoteSlot], p.length};
      batchBytes += p.length;
    }
    count = i;
    turnOps += count;
    inFlight_.fetch_add(static_cast<std::uint32_t>(count));
    tCompletedInline = 0;
    endpoint.postBatch({batch.data(), count}, isWrite, &opSink_);
    if (tCompletedInline != 0) inFlight_.fetch_sub(tCompletedInline);
    // Only bytes copied inside the post count towards the turn; operations still in flight
    // cost this thread nothing more (the share is exact where every operation of the batch
    // completed inline or none did, as on one endpoint they do).
    turnBytes += copiesWhenPosted ? batchBytes : batchBytes * tCompletedInline / count;
  }
  tPosting = nullptr;
  return false;
}

void Transfer::advance() {
  if (staged()) deliverStagedCompletions();
  std::shared_ptr<Transfer> keepAlive;  // outlives the lock if finishing drops the last reference
  sync::UniqueLock lock(mutex_);
  if (state_.load() != TransferState::kPending) return;
  if (relink_.load() && !errored_.load() && inFlight_.load() == 0 && !relinkLocked()) return;
  if (!errored_.load() && !relink_.load()) {
    if (phase_ == Phase::kOps) {
      if (staged()) beginStagedLocked();
      if (postOpsLocked()) {
        // Turn over: the rest is posted from the progress thread's queue, after the turns of
        // the other transfers waiting there.
        lock.unlock();
        listener_.needsAttentionWoken(shared_from_this());
        return;
      }
      // The flush covers the staged puts too: they went out on the same endpoint.
      if (nextOp_ == plan_.ops.size() && stagedLeft_.load() == 0 && !errored_.load() &&
          !relink_.load()) {
        phase_ = Phase::kFlush;
        inFlight_.fetch_add(1);
        link_->endpoint().flush(&flushSink_);
      }
    }
    if (phase_ == Phase::kFlush && flushDone_.load() && !errored_.load() && !relink_.load()) {
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
  if (errored_.load() && stagedBegun_ && !stagedCancelled_ && stagedLeft_.load() > 0) {
    stagedCancelled_ = true;  // the staged moves drain, then report through onStagedDone
    for (const auto& share : stagedShares_) share->cancel();
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
  stagedShares_.clear();  // their moves reported: the staging buffers go back
  registry_->unpin(plan_.localRegions);
  link_.reset();
  postingLink_.store(nullptr);
  keysEpoch_ = 0;
  state_.store(errored_.load() ? TransferState::kFailed : TransferState::kDone);
  listener_.finished(*this);
  return std::move(self_);
}

std::function<void()> Transfer::wakeWhenLinkReady() {
  std::weak_ptr<Transfer> weak = weak_from_this();
  TransferListener* listener = &listener_;
  return [weak, listener] {
    if (auto self = weak.lock()) listener->needsAttentionWoken(std::move(self));
  };
}

bool Transfer::relinkLocked() {
  const std::string where = describe();
  // Without a link yet, the transfer started during a reset and has posted nothing.
  const bool repost = link_ != nullptr;
  if (repost && relinks_ >= kMaxRelinks) {
    recordError(transportError("this agent reset its data path to '" + peer_->name() +
                               "' while operations of this transfer were in flight, " +
                               std::to_string(relinks_ + 1) +
                               " times (the last: " + link_->resetReason() +
                               "); it posted them again " + std::to_string(relinks_) + " times")
                    .withContext(where));
    return true;
  }
  auto next = peer_->linkWhenReady(wakeWhenLinkReady());
  if (!next.isOk()) {
    recordError(next.status().withContext(where + ", after a reset of its link"));
    return true;
  }
  if (*next == nullptr) return false;  // handed back once the reset opened the next link
  if (repost) {
    ++relinks_;
    spdlog::info(
        "{}: the data path was reset ({}) under {} operation(s) of it; posting them "
        "again on the next link",
        where, link_->resetReason(), plan_.ops.size());
  }
  relink_.store(false);
  const Status keyed = useLink(std::move(next).value());
  if (!keyed.isOk()) {
    recordError(keyed.withContext(where + ", after a reset of its link"));
    return true;
  }
  nextOp_ = 0;
  phase_ = Phase::kOps;
  flushDone_.store(false);
  return true;
}

Status Transfer::createStagedRunLocked() {
  stagedShares_.clear();
  if (staging_ == nullptr) {
    return internalError("transfer " + std::to_string(id_.value) +
                         " has staged operations but no staging service");
  }
  // The wires' completions may outlive the move and even the transfer: they hold it weakly.
  std::weak_ptr<Transfer> weak = weak_from_this();
  TransferListener* listener = &listener_;
  auto notify = [weak, listener] {
    if (auto self = weak.lock()) listener->needsAttentionWoken(std::move(self));
  };
  if (!plan_.stagedOps.empty()) {
    KVX_ASSIGN_OR_RETURN(auto share, staging_->localShare(plan_, op_, link_, keys_, notify));
    stagedShares_.push_back(std::move(share));
  }
  if (!plan_.remoteStagedOps.empty() || !plan_.bothStagedOps.empty()) {
    auto share = staging_->windowShare(plan_, op_, peer_, link_, notify);
    if (!share.isOk()) {
      stagedShares_.clear();
      return share.status().withContext(describe());
    }
    stagedShares_.push_back(std::move(share).value());
  }
  return Status::ok();
}

void Transfer::beginStagedLocked() {
  if (stagedBegun_) return;
  stagedBegun_ = true;
  for (const auto& share : stagedShares_) {
    inFlight_.fetch_add(1);
    const Status begun = share->begin([this](Status status) { onStagedDone(std::move(status)); });
    if (!begun.isOk()) {
      recordError(explain(begun));
      stagedLeft_.fetch_sub(1);
      inFlight_.fetch_sub(1);
    }
  }
}

void Transfer::onStagedDone(Status status) {
  // As in onComplete: hold a reference before the count drops and the transfer may finish.
  std::shared_ptr<Transfer> self = shared_from_this();
  if (!status.isOk()) recordError(explain(std::move(status)));
  stagedLeft_.fetch_sub(1);
  inFlight_.fetch_sub(1);
  listener_.needsAttentionWoken(std::move(self));
}

void Transfer::deliverStagedCompletions() {
  // Outside mutex_: handing a chunk on may post the next one, or finish a share.
  std::vector<std::shared_ptr<StagedShare>> shares;
  {
    sync::MutexLock lock(mutex_);
    shares = stagedShares_;
  }
  for (const auto& share : shares) share->deliverCompleted();
}

}  // namespace kvx::engine
