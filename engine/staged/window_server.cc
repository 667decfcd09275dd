#include "engine/staged/window_server.h"

#include <spdlog/spdlog.h>

namespace kvx::engine {
namespace {

// Requests waiting for a slot, at most; beyond that a peer is told the window is busy.
constexpr std::size_t kMaxWaiting = 4096;

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
    std::lock_guard lock(queueMutex_);
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
    std::lock_guard lock(queueMutex_);
    if (closed_) return;
    inbound_.push_back(Inbound{peer, {}});
  }
  wake_();
}

void WindowServer::close() {
  std::lock_guard lock(queueMutex_);
  closed_ = true;
  inbound_.clear();
  copiesDone_.clear();
}

std::size_t WindowServer::slotsLent() {
  std::lock_guard lock(pumpMutex_);
  return window_->lent();
}

std::uint64_t WindowServer::refused() const { return refused_.load(); }

bool WindowServer::pump() {
  std::unique_lock pumping(pumpMutex_, std::try_to_lock);
  if (!pumping.owns_lock()) return false;
  bool any = false;
  for (;;) {
    std::deque<Inbound> inbound;
    std::deque<CopyDone> copies;
    {
      std::lock_guard lock(queueMutex_);
      if (closed_) return any;
      inbound.swap(inbound_);
      copies.swap(copiesDone_);
    }
    if (inbound.empty() && copies.empty()) return any;
    any = true;
    for (const CopyDone& done : copies) handleCopyDone(done);
    for (Inbound& message : inbound) {
      if (message.payload.empty()) {
        std::erase_if(waiting_, [&](const Waiting& w) { return w.peer == message.peer; });
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
      auto region = checkRange(request);
      if (!region.isOk()) {
        refuse(peer, request, region.status());
        return;
      }
      if (waiting_.size() >= kMaxWaiting) {
        refuse(peer, request,
               resourceExhausted("the staging window has " + std::to_string(kMaxWaiting) +
                                 " requests waiting for a slot"));
        return;
      }
      waiting_.push_back(Waiting{peer, request, std::move(region).value()});
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

Result<std::shared_ptr<LocalRegion>> WindowServer::checkRange(const StagingRequest& request) {
  KVX_ASSIGN_OR_RETURN(std::shared_ptr<LocalRegion> region,
                       registry_.find(RegionId(request.region)));
  const RegionInfo& info = region->info;
  if (!info.exposed || info.kind != MemoryKind::kCuda ||
      !region->memory->packedRemoteKey().empty()) {
    return failedPrecondition("region '" + info.name +
                              "' is not GPU memory served through the staging window");
  }
  if (!rangeFits(info.length, request.offset, request.length)) {
    return invalidArgument("range [" + std::to_string(request.offset) + "+" +
                           std::to_string(request.length) + ") exceeds region '" + info.name +
                           "' (length " + std::to_string(info.length) + ")");
  }
  if (request.length > window_->slotBytes()) {
    return invalidArgument("a chunk of " + std::to_string(request.length) +
                           " bytes exceeds a staging slot (" +
                           std::to_string(window_->slotBytes()) + " bytes)");
  }
  return region;
}

void WindowServer::serveWaiting() {
  while (!waiting_.empty()) {
    Waiting& next = waiting_.front();
    StagingWindow::Lease lease{next.peer,   next.request.requestId, next.request.op,
                               next.region, next.request.offset,    next.request.length};
    const std::optional<std::uint32_t> slot = window_->lend(std::move(lease));
    if (!slot) return;
    const Waiting served = std::move(next);
    waiting_.pop_front();
    if (served.request.op == StagingOp::kWrite) {
      send(served.peer, StagingReply{StagingReplyKind::kGranted, *slot, served.request.requestId});
    } else {
      startCopy(*slot);
    }
  }
}

void WindowServer::startCopy(std::uint32_t slot) {
  StagingWindow::Lease& lease = *window_->at(slot);
  const std::string peer = lease.peer;
  const StagingRequest request{
      lease.op, slot, lease.requestId, lease.region->info.id.value, lease.offset, lease.length};
  auto copies = staging_.copyEngine(lease.region->info.device);
  // Pinned for the copy: the region cannot be deregistered (and freed) under it.
  const std::shared_ptr<LocalRegion> regions[] = {lease.region};
  Status ready = copies.isOk() ? registry_.pin(regions) : copies.status();
  if (!ready.isOk()) {
    window_->giveBack(slot);
    refuse(peer, request, ready);
    return;
  }
  lease.copying = true;
  gpu::CopyRequest copy;
  copy.length = static_cast<std::size_t>(lease.length);
  std::byte* device = reinterpret_cast<std::byte*>(lease.region->base()) + lease.offset;
  if (lease.op == StagingOp::kWrite) {
    copy.kind = gpu::CopyKind::kHostToDevice;
    copy.source = window_->slot(slot);
    copy.destination = device;
  } else {
    copy.kind = gpu::CopyKind::kDeviceToHost;
    copy.source = device;
    copy.destination = window_->slot(slot);
  }
  (*copies)->copy(copy, [this, slot](Status status) {
    {
      std::lock_guard lock(queueMutex_);
      if (closed_) return;
      copiesDone_.push_back(CopyDone{slot, std::move(status)});
    }
    wake_();
  });
}

void WindowServer::handleCopyDone(const CopyDone& done) {
  StagingWindow::Lease* lease = window_->at(done.slot);
  if (lease == nullptr || !lease->copying) return;
  lease->copying = false;
  const std::shared_ptr<LocalRegion> regions[] = {lease->region};
  registry_.unpin(regions);
  const std::string peer = lease->peer;
  const StagingRequest request{lease->op,        done.slot,
                               lease->requestId, lease->region->info.id.value,
                               lease->offset,    lease->length};
  // A write's slot is free once its bytes are in the device; a read's stays lent until the
  // peer has fetched the bytes and releases it. A failed copy frees it either way.
  if (!done.status.isOk()) {
    window_->giveBack(done.slot);
    refuse(
        peer, request,
        done.status.withContext("copying slot " + std::to_string(done.slot) + " " +
                                (request.op == StagingOp::kWrite ? "to" : "from") + " region '" +
                                lease->region->info.name + "' [" + std::to_string(request.offset) +
                                "+" + std::to_string(request.length) + ")"));
    return;
  }
  if (request.op == StagingOp::kWrite) {
    window_->giveBack(done.slot);
    send(peer, StagingReply{StagingReplyKind::kCopied, done.slot, request.requestId});
  } else {
    send(peer, StagingReply{StagingReplyKind::kReady, done.slot, request.requestId});
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
