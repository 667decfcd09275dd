#include "engine/staged/window_server.h"

#include <spdlog/spdlog.h>

namespace kvx::engine {
namespace {

// Requests waiting for a slot, at most, per peer and in all; beyond that a peer is told the
// window is busy.
constexpr std::size_t kMaxWaitingPerPeer = 4096;
constexpr std::size_t kMaxWaiting = 16384;

std::string describeRequest(const std::string& peer, const StagingRequest& request) {
  return "staging " + std::string(toString(request.op)) + " request " +
         std::to_string(request.requestId) + " from '" + peer + "'";
}

}  // namespace

WindowServer::WindowServer(std::unique_ptr<StagingWindow> window, MemoryRegistry& registry,
                           StagingService& staging, ReplySender reply, std::function<void()> wake)
    : metadata_(window->metadata()),
      registry_(registry),
      staging_(staging),
      reply_(std::move(reply)),
      wake_(std::move(wake)),
      window_(std::move(window)) {}

WindowServer::~WindowServer() = default;

void WindowServer::onRequest(const std::string& peer, std::span<const std::uint8_t> payload) {
  {
    sync::MutexLock lock(queueMutex_);
    if (closed_) return;
    // An empty payload marks a departure: keep a real request non-empty.
    if (payload.empty()) {
      ++refused_;
      spdlog::warn("dropped an empty staging request from '{}'", peer);
      return;
    }
    inbound_.push_back(Inbound{peer, {payload.begin(), payload.end()}});
  }
  // The engine's progress runs pump() right after the transport's progress returns.
}

void WindowServer::peerGone(const std::string& peer) {
  {
    sync::MutexLock lock(queueMutex_);
    if (closed_) return;
    inbound_.push_back(Inbound{peer, {}});
  }
  wake_();
}

void WindowServer::close() {
  sync::MutexLock lock(queueMutex_);
  closed_ = true;
  inbound_.clear();
  copiesDone_.clear();
}

std::size_t WindowServer::slotsLent() {
  sync::MutexLock lock(pumpMutex_);
  return window_->lent();
}

std::uint64_t WindowServer::lends() const { return lends_.load(); }

std::uint64_t WindowServer::refused() const { return refused_.load(); }

bool WindowServer::pump() {
  if (!pumpMutex_.try_lock()) return false;
  sync::MutexLock pumping(pumpMutex_, std::adopt_lock);
  bool any = false;
  for (;;) {
    std::deque<Inbound> inbound;
    std::deque<CopyDone> copies;
    {
      sync::MutexLock lock(queueMutex_);
      if (closed_) return any;
      inbound.swap(inbound_);
      copies.swap(copiesDone_);
    }
    if (inbound.empty() && copies.empty()) return any;
    any = true;
    for (const CopyDone& done : copies) handleCopyDone(done);
    for (Inbound& message : inbound) {
      if (message.payload.empty()) {
        waiting_.eraseOf(message.peer);
        window_->giveBackAllOf(message.peer);
        continue;
      }
      auto request = decodeStagingRequest(message.payload);
      if (!request.isOk()) {
        ++refused_;
        spdlog::warn("dropped a staging request from '{}': {}", message.peer,
                     request.status().toString());
        continue;
      }
      handle(message.peer, *request);
    }
    serveWaiting();
  }
}

void WindowServer::handle(const std::string& peer, const StagingRequest& request) {
  switch (request.op) {
    case StagingOp::kWrite:
    case StagingOp::kRead: {
      auto ranges = checkRanges(request);
      if (!ranges.isOk()) {
        refuse(peer, request, ranges.status());
        return;
      }
      if (waiting_.sizeOf(peer) >= kMaxWaitingPerPeer || waiting_.size() >= kMaxWaiting) {
        refuse(peer, request,
               resourceExhausted("the staging window has " + std::to_string(waiting_.sizeOf(peer)) +
                                 " requests of this peer and " + std::to_string(waiting_.size()) +
                                 " in all waiting for a slot (at most " +
                                 std::to_string(kMaxWaitingPerPeer) + " and " +
                                 std::to_string(kMaxWaiting) + ")"));
        return;
      }
      waiting_.push(peer, Waiting{request, std::move(ranges).value()});
      return;
    }
    case StagingOp::kCopyIn: {
      StagingWindow::Lease* lease = window_->held(request.slot, peer, request.requestId);
      if (lease == nullptr || lease->op != StagingOp::kWrite || lease->copying) {
        refuse(peer, request,
               failedPrecondition("slot " + std::to_string(request.slot) +
                                  " is not granted to it for this write"));
        return;
      }
      startCopy(request.slot);
      return;
    }
    case StagingOp::kRelease: {
      StagingWindow::Lease* lease = window_->held(request.slot, peer, request.requestId);
      if (lease == nullptr || lease->copying) {
        ++refused_;
        spdlog::warn("{}: slot {} is not lent to it (ignored)", describeRequest(peer, request),
                     request.slot);
        return;
      }
      window_->giveBack(request.slot);
      return;
    }
  }
}

Result<std::vector<StagingWindow::LeaseRange>> WindowServer::checkRanges(
    const StagingRequest& request) {
  std::vector<StagingWindow::LeaseRange> ranges;
  ranges.reserve(request.ranges.size());
  std::uint64_t total = 0;
  for (const StagingRange& range : request.ranges) {
    KVX_ASSIGN_OR_RETURN(std::shared_ptr<LocalRegion> region,
                         registry_.find(RegionId(range.region)));
    const RegionInfo& info = region->info;
    if (!info.exposed || info.kind != MemoryKind::kCuda ||
        !region->memory->packedRemoteKey().empty()) {
      return failedPrecondition("region '" + info.name +
                                "' is not GPU memory served through the staging window");
    }
    if (!rangeFits(info.length, range.offset, range.length)) {
      return invalidArgument("range [" + std::to_string(range.offset) + "+" +
                             std::to_string(range.length) + ") exceeds region '" + info.name +
                             "' (length " + std::to_string(info.length) + ")");
    }
    // Ranges are at most a slot each (checked first), so the sum cannot wrap.
    if (range.length > window_->slotBytes() || (total += range.length) > window_->slotBytes()) {
      return invalidArgument("ranges of " + std::to_string(request.bytes()) +
                             " bytes in all exceed a staging slot (" +
                             std::to_string(window_->slotBytes()) + " bytes)");
    }
    ranges.push_back(StagingWindow::LeaseRange{std::move(region), range.offset, range.length});
  }
  return ranges;
}

void WindowServer::serveWaiting() {
  while (!waiting_.empty()) {
    Waiting& next = waiting_.front();
    const std::string peer = waiting_.frontPeer();
    StagingWindow::Lease lease;
    lease.peer = peer;
    lease.requestId = next.request.requestId;
    lease.op = next.request.op;
    lease.ranges = next.ranges;
    const std::optional<std::uint32_t> slot = window_->lend(std::move(lease));
    if (!slot) return;
    ++lends_;
    const Waiting served = std::move(next);
    waiting_.pop();
    if (served.request.op == StagingOp::kWrite) {
      send(peer, StagingReply{StagingReplyKind::kGranted, *slot, served.request.requestId, {}});
    } else {
      startCopy(*slot);
    }
  }
}

namespace {

// The regions of a lease's ranges, for pinning.
std::vector<std::shared_ptr<LocalRegion>> regionsOf(const StagingWindow::Lease& lease) {
  std::vector<std::shared_ptr<LocalRegion>> regions;
  regions.reserve(lease.ranges.size());
  for (const StagingWindow::LeaseRange& range : lease.ranges) regions.push_back(range.region);
  return regions;
}

// "region 'kv' [0+4096)", or the first of several and how many there are.
std::string describeRanges(const StagingWindow::Lease& lease) {
  const StagingWindow::LeaseRange& first = lease.ranges.front();
  std::string text = "region '" + first.region->info.name + "' [" + std::to_string(first.offset) +
                     "+" + std::to_string(first.length) + ")";
  if (lease.ranges.size() > 1) {
    text += " and " + std::to_string(lease.ranges.size() - 1) + " more range(s)";
  }
  return text;
}

}  // namespace

void WindowServer::startCopy(std::uint32_t slot) {
  StagingWindow::Lease& lease = *window_->at(slot);
  const std::string peer = lease.peer;
  const StagingRequest request{lease.op, slot, lease.requestId, {}};
  // Every range's copy engine first: nothing starts unless all of them can.
  std::vector<gpu::CopyEngine*> engines;
  Status ready;
  for (const StagingWindow::LeaseRange& range : lease.ranges) {
    auto copies = staging_.copyEngine(range.region->info.device);
    if (!copies.isOk()) {
      ready = copies.status();
      break;
    }
    engines.push_back(*copies);
  }
  // Pinned for the copies: the regions cannot be deregistered (and freed) under them.
  const std::vector<std::shared_ptr<LocalRegion>> regions = regionsOf(lease);
  if (ready.isOk()) ready = registry_.pin(regions);
  if (!ready.isOk()) {
    window_->giveBack(slot);
    refuse(peer, request, ready);
    return;
  }
  lease.copying = true;
  lease.copiesLeft = lease.ranges.size();
  lease.copyStatus = Status::ok();
  // The callbacks may run before this loop ends, but they only queue: the lease changes only
  // in handleCopyDone, on this (pumping) thread, after the loop.
  std::byte* inSlot = window_->slot(slot);
  for (std::size_t i = 0; i < lease.ranges.size(); ++i) {
    const StagingWindow::LeaseRange& range = lease.ranges[i];
    gpu::CopyRequest copy;
    copy.length = static_cast<std::size_t>(range.length);
    std::byte* device = reinterpret_cast<std::byte*>(range.region->base()) + range.offset;
    if (request.op == StagingOp::kWrite) {
      copy.kind = gpu::CopyKind::kHostToDevice;
      copy.source = inSlot;
      copy.destination = device;
    } else {
      copy.kind = gpu::CopyKind::kDeviceToHost;
      copy.source = device;
      copy.destination = inSlot;
    }
    inSlot += range.length;
    engines[i]->copy(copy, [this, slot](Status status) {
      {
        sync::MutexLock lock(queueMutex_);
        if (closed_) return;
        copiesDone_.push_back(CopyDone{slot, std::move(status)});
      }
      wake_();
    });
  }
}

void WindowServer::handleCopyDone(const CopyDone& done) {
  StagingWindow::Lease* lease = window_->at(done.slot);
  if (lease == nullptr || !lease->copying) return;
  if (!done.status.isOk() && lease->copyStatus.isOk()) lease->copyStatus = done.status;
  if (--lease->copiesLeft > 0) return;
  lease->copying = false;
  registry_.unpin(regionsOf(*lease));
  const std::string peer = lease->peer;
  const StagingRequest request{lease->op, done.slot, lease->requestId, {}};
  // A write's slot is free once its bytes are in the device; a read's stays lent until the
  // peer has fetched the bytes and releases it. A failed copy frees it either way.
  if (!lease->copyStatus.isOk()) {
    const std::string what = "copying slot " + std::to_string(done.slot) + " " +
                             (request.op == StagingOp::kWrite ? "to " : "from ") +
                             describeRanges(*lease);
    const Status failure = lease->copyStatus.withContext(what);
    window_->giveBack(done.slot);
    refuse(peer, request, failure);
    return;
  }
  if (request.op == StagingOp::kWrite) {
    window_->giveBack(done.slot);
    send(peer, StagingReply{StagingReplyKind::kCopied, done.slot, request.requestId, {}});
  } else {
    send(peer, StagingReply{StagingReplyKind::kReady, done.slot, request.requestId, {}});
  }
}

void WindowServer::refuse(const std::string& peer, const StagingRequest& request, Status why) {
  ++refused_;
  const Status status = why.withContext(describeRequest(peer, request));
  spdlog::warn("refused {}", status.toString());
  if (request.op == StagingOp::kRelease) return;
  send(peer, StagingReply{StagingReplyKind::kFailed, request.slot, request.requestId, status});
}

void WindowServer::send(const std::string& peer, const StagingReply& reply) {
  reply_(peer, encodeStagingReply(reply));
}

}  // namespace kvx::engine
