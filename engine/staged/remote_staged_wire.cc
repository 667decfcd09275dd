#include "engine/staged/remote_staged_wire.h"

#include "engine/transport/countdown_completion.h"
#include "engine/transport/owned_message.h"

namespace kvx::engine {

// The RMA operations of one piece's move (a put and its flush, or a get). With the last
// completion it queues the outcome on the wire and deletes itself.
struct RemoteStagedWire::RmaSink final : CountdownCompletion {
  RemoteStagedWire* wire = nullptr;
  std::uint64_t requestId = 0;

  void finished(Status outcome) override {
    wire->queue(Event{Event::Kind::kRmaDone, requestId, {}, std::move(outcome)});
  }
};

RemoteStagedWire::RemoteStagedWire(Config config) : config_(std::move(config)) {}

RemoteStagedWire::~RemoteStagedWire() = default;

std::string RemoteStagedWire::describePiece(const Piece& piece) const {
  const RemotePart& first = piece.piece.parts.front();
  std::string ranges = "region " + std::to_string(first.region.value) + " [" +
                       std::to_string(first.offset) + "+" + std::to_string(first.length) + ")";
  if (piece.piece.parts.size() > 1) {
    ranges += " and " + std::to_string(piece.piece.parts.size() - 1) + " more range(s)";
  }
  return std::string(config_.write ? "staged write to " : "staged read from ") + ranges +
         " of peer '" + config_.peer->name() + "' through its staging window";
}

void RemoteStagedWire::post(const RemotePiece& piece, gpu::WireCallback done) {
  StagingRequest request;
  request.op = config_.write ? StagingOp::kWrite : StagingOp::kRead;
  request.ranges.reserve(piece.parts.size());
  for (const RemotePart& part : piece.parts) {
    request.ranges.push_back(StagingRange{part.region.value, part.offset, part.length});
  }
  {
    sync::MutexLock lock(mutex_);
    if (cancelled_) {
      // Its callback runs below, after the lock is released: it may post again.
      request.requestId = 0;
    } else {
      request.requestId = (std::uint64_t{config_.wireId} << 32) | nextPiece_++;
      Piece& entry = pieces_[request.requestId];
      entry.piece = piece;
      entry.done = std::move(done);
      entry.deadline = std::chrono::steady_clock::now() + config_.replyTimeout;
    }
  }
  if (request.requestId == 0) {
    if (done) done(cancelled("staged move cancelled before the chunk started"));
    return;
  }
  sendRequests({request});
  config_.notify();
}

void RemoteStagedWire::cancel() {
  {
    sync::MutexLock lock(mutex_);
    cancelled_ = true;
  }
  config_.notify();
}

void RemoteStagedWire::onReply(const StagingReply& reply) {
  queue(Event{Event::Kind::kReply, reply.requestId, reply, {}});
}

void RemoteStagedWire::queue(Event event) {
  // Once queued, another thread may deliver it and the owner may drop the wire: notify
  // through a copy.
  const std::function<void()> notify = config_.notify;
  {
    sync::MutexLock lock(mutex_);
    events_.push_back(std::move(event));
  }
  notify();
}

void RemoteStagedWire::tick(std::chrono::steady_clock::time_point now) {
  auto current = config_.peer->link();
  Status linkLost;
  if (!current.isOk()) {
    linkLost = current.status();
  } else if (*current != config_.link) {
    linkLost = peerFailed("the link to peer '" + config_.peer->name() +
                          "' was reset while a staging reply was awaited");
  }
  std::vector<Event> late;
  {
    sync::MutexLock lock(mutex_);
    for (const auto& [id, piece] : pieces_) {
      if (piece.stage == Stage::kMoving) continue;  // its RMA completion will come
      if (!linkLost.isOk()) {
        late.push_back(Event{Event::Kind::kFail, id, {}, linkLost});
      } else if (now >= piece.deadline) {
        late.push_back(Event{Event::Kind::kFail,
                             id,
                             {},
                             timedOut("no staging reply from peer '" + config_.peer->name() +
                                      "' within " + std::to_string(config_.replyTimeout.count()) +
                                      " ms (the peer may still copy this chunk)")});
      }
    }
  }
  for (Event& event : late) queue(std::move(event));
}

bool RemoteStagedWire::deliverCompleted() {
  std::vector<StagingRequest> send;
  std::vector<Finished> finished;
  std::vector<std::uint64_t> moves;
  {
    sync::MutexLock lock(mutex_);
    if (events_.empty()) return false;
    while (!events_.empty()) {
      Event event = std::move(events_.front());
      events_.pop_front();
      handleLocked(event, send, finished, moves);
    }
  }
  sendRequests(send);
  for (const std::uint64_t id : moves) startMove(id);
  for (Finished& f : finished) f.done(std::move(f.status));
  return true;
}

void RemoteStagedWire::handleLocked(Event& event, std::vector<StagingRequest>& send,
                                    std::vector<Finished>& finished,
                                    std::vector<std::uint64_t>& moves) {
  auto it = pieces_.find(event.requestId);
  const auto release = [&](std::uint32_t slot) {
    send.push_back(StagingRequest{StagingOp::kRelease, slot, event.requestId, {}});
  };
  const auto finish = [&](Status status) KVX_REQUIRES(mutex_) {
    finished.push_back(Finished{std::move(it->second.done), std::move(status)});
    pieces_.erase(it);
  };
  if (it == pieces_.end()) {
    // The piece ended already (timed out, failed): give back a slot lent to it late.
    if (event.kind == Event::Kind::kReply && (event.reply.kind == StagingReplyKind::kGranted ||
                                              event.reply.kind == StagingReplyKind::kReady)) {
      release(event.reply.slot);
    }
    return;
  }
  Piece& piece = it->second;
  switch (event.kind) {
    case Event::Kind::kFail:
      if (piece.stage != Stage::kMoving) finish(event.status.withContext(describePiece(piece)));
      return;
    case Event::Kind::kRmaDone:
      if (piece.stage != Stage::kMoving) return;
      if (!event.status.isOk()) {
        release(piece.slot);
        finish(event.status.withContext(describePiece(piece)));
      } else if (!config_.write) {
        release(piece.slot);
        finish(Status::ok());
      } else if (cancelled_) {
        release(piece.slot);
        finish(cancelled(describePiece(piece) + " cancelled before its copy"));
      } else {
        piece.stage = Stage::kCopying;
        piece.deadline = std::chrono::steady_clock::now() + config_.replyTimeout;
        send.push_back(StagingRequest{StagingOp::kCopyIn, piece.slot, event.requestId, {}});
      }
      return;
    case Event::Kind::kReply: break;
  }
  const StagingReply& reply = event.reply;
  const bool slotReply =
      reply.kind == StagingReplyKind::kGranted || reply.kind == StagingReplyKind::kReady;
  const StagingReplyKind expectedSlot =
      config_.write ? StagingReplyKind::kGranted : StagingReplyKind::kReady;
  if (piece.stage == Stage::kMoving) return;  // only its RMA completion moves it on
  if (reply.kind == StagingReplyKind::kFailed) {
    finish(reply.status.withContext(describePiece(piece)));
  } else if (slotReply && piece.stage == Stage::kRequested && reply.kind == expectedSlot) {
    if (reply.slot >= slots()) {
      finish(protocolError("peer named slot " + std::to_string(reply.slot) + " of a window of " +
                           std::to_string(slots()))
                 .withContext(describePiece(piece)));
    } else if (cancelled_) {
      release(reply.slot);
      finish(cancelled(describePiece(piece) + " cancelled before it moved"));
    } else {
      piece.stage = Stage::kMoving;
      piece.slot = reply.slot;
      moves.push_back(event.requestId);
    }
  } else if (reply.kind == StagingReplyKind::kCopied && piece.stage == Stage::kCopying) {
    finish(Status::ok());
  } else {
    if (slotReply) release(reply.slot);
    finish(protocolError("unexpected staging reply of kind " +
                         std::to_string(static_cast<int>(reply.kind)))
               .withContext(describePiece(piece)));
  }
}

void RemoteStagedWire::startMove(std::uint64_t requestId) {
  // One RMA operation per run of parts contiguous in local memory (a staging buffer's chunk
  // is one run), each at its place in the slot.
  std::vector<RmaOp> ops;
  {
    sync::MutexLock lock(mutex_);
    const Piece& piece = pieces_.at(requestId);
    std::uint64_t remote = config_.window->region->info.address + piece.slot * slotBytes();
    for (const RemotePart& part : piece.piece.parts) {
      RmaOp* last = ops.empty() ? nullptr : &ops.back();
      if (last != nullptr && last->localMemory == part.localMemory &&
          static_cast<std::byte*>(last->localAddress) + last->length == part.local) {
        last->length += part.length;
      } else {
        RmaOp op;
        op.localAddress = part.local;
        op.localMemory = part.localMemory;
        op.remoteAddress = remote;
        op.remoteKey = config_.windowKey;
        op.length = part.length;
        ops.push_back(op);
      }
      remote += part.length;
    }
  }
  auto* sink = new RmaSink();
  sink->wire = this;
  sink->requestId = requestId;
  Endpoint& endpoint = config_.link->endpoint();
  if (config_.write) {
    // The flush makes the puts complete at the peer before the copy request, which the
    // endpoint orders after them, can reach the peer.
    sink->expect(ops.size() + 1);
    for (const RmaOp& op : ops) endpoint.put(op, sink);
    endpoint.flush(sink);
  } else {
    sink->expect(ops.size());
    for (const RmaOp& op : ops) endpoint.get(op, sink);
  }
  config_.notify();
}

void RemoteStagedWire::sendRequests(const std::vector<StagingRequest>& requests) {
  for (const StagingRequest& request : requests) {
    sendOwnedMessage(config_.link->endpoint(), config_.requestHeader, encodeStagingRequest(request),
                     "staging " + std::string(toString(request.op)) + " request to '" +
                         config_.peer->name() + "'");
  }
}

}  // namespace kvx::engine
