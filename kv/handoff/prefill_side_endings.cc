// PrefillSide: how requests end: success, failure with the abort handshake, peer loss, deadlines.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "kv/handoff/prefill_side.h"

namespace kvx::kv::handoff {

void PrefillSide::fail(Request& r, Status why, bool tellPeer) {
  if (r.failing) return;
  r.failing = true;
  r.view.status = std::move(why);
  queue_.remove(r.spec.id);
  r.moves.cancelAll(context_.port);
  r.abortPending = tellPeer && (r.placing || r.placed) && peersAlive_.contains(r.view.peer);
  spdlog::debug("{}: request '{}' failing: {}", context_.name, r.spec.id, r.view.status.toString());
  maybeFinish(r.spec.id);
}

void PrefillSide::maybeFinish(const std::string& id) {
  Request* r = find(id);
  if (r == nullptr || !r->moves.empty()) return;
  if (!r->failing && !r->confirmed) return;
  if (r->failing) {
    // Our own writes have drained: only now may the decode side reuse its blocks.
    const bool alive = peersAlive_.contains(r->view.peer);
    if (r->abortPending && alive) {
      (void)context_.port.send(r->view.peer, AbortMsg{id, r->view.status, r->attempt});
      // In PULL the decode side reads our blocks until it acknowledges; an unplaced
      // request may be mid-placement there.
      r->awaitingAck = r->mode == KvMode::kPull || !r->placed;
      r->ackDeadline = Clock::now() + context_.options.leaseTimeout;
    }
    r->abortPending = false;
    if (r->ackOwed && alive) (void)context_.port.send(r->view.peer, AbortAckMsg{id, 0, r->attempt});
    r->ackOwed = false;
    if (r->awaitingAck) {
      // The caller learns of the failure now; only the source blocks wait for the
      // acknowledgement (the decode side may still be reading them, and its own reads can
      // take until they time out there).
      reportFailed(*r);
      return;
    }
    if (!r->producerDone) {
      // The producer may be writing a layer into them: they wait for its next call.
      reportFailed(*r);
      return;
    }
  }
  Status freed = context_.allocator.free(kv::compressBlocks(r->spec.sourceBlocks));
  if (!freed.isOk()) {
    spdlog::error("{}: freeing the source blocks of '{}': {}", context_.name, id, freed.toString());
  }
  if (!r->view.peer.empty() && (r->placed || r->placing)) {
    scheduler_.recordFinished(r->view.peer, r->bytesEstimate);
  }
  if (r->failing) {
    reportFailed(*r);
  } else {
    r->view.state = KvRequestState::kReleased;
    if (r->view.latency.count() == 0) r->view.latency = Clock::now() - r->submitted;
    publish(*r);
  }
  requests_.erase(id);
  retryQueued();
}

void PrefillSide::reportFailed(Request& r) {
  if (r.view.state == KvRequestState::kFailed) return;
  r.view.state = KvRequestState::kFailed;
  if (r.view.latency.count() == 0) r.view.latency = Clock::now() - r.submitted;
  publish(r);
}

void PrefillSide::onPeerGone(const std::string& peer, const Status& why) {
  if (peersAlive_.erase(peer) == 0) return;
  redialed_.insert(peer);
  scheduler_.removePeer(peer);
  std::vector<std::string> affected;
  for (auto& [id, r] : requests_) {
    if (r.view.peer == peer) affected.push_back(id);
  }
  for (const std::string& id : affected) {
    Request& r = requests_.at(id);
    if (r.placing && !r.placed && !r.failing && r.spec.destination != peer) {
      // Never placed and not pinned to the lost agent: another decode agent may take it.
      r.placing = false;
      r.view.peer.clear();
      tryPlace(r);
      continue;
    }
    r.awaitingAck = false;  // nobody left to acknowledge
    if (!r.failing) {
      fail(r, peerFailed("decode agent '" + peer + "' failed: " + why.message()), false);
    } else {
      maybeFinish(id);
    }
  }
}

void PrefillSide::onTick() {
  const auto now = Clock::now();
  for (const std::string& id : queue_.takeExpired(now)) {
    if (Request* r = find(id)) {
      fail(*r,
           timedOut("request '" + id +
                    "' found no decode agent with room before its deadline: " + r->waitReason),
           false);
    }
  }
  std::vector<std::string> expired, ackLost;
  for (auto& [id, r] : requests_) {
    // A confirmed request only waits for its own write's completion: not a timeout.
    if (!r.failing && !r.confirmed && now >= r.deadline) expired.push_back(id);
    if (r.failing && r.awaitingAck && now >= r.ackDeadline) ackLost.push_back(id);
  }
  for (const std::string& id : expired) {
    Request& r = requests_.at(id);
    fail(r,
         timedOut("request '" + id + "' was still " + std::string(toString(r.view.state)) +
                  " at its deadline"),
         true);
  }
  for (const std::string& id : ackLost) {
    Request* r = find(id);
    if (r == nullptr || !r->awaitingAck) continue;
    // Freeing now could let the peer's late reads see reused blocks: cut it off first.
    const std::string peer = r->view.peer;
    const Status why = peerFailed("decode agent '" + peer + "' did not acknowledge the abort of '" +
                                  id + "' in time");
    spdlog::warn("{}: {}; disconnecting it", context_.name, why.message());
    context_.port.disconnect(peer, why);
    onPeerGone(peer, why);
  }
}

void PrefillSide::failAll(const Status& why) {
  failWhere(why, [](const Request&) { return true; });
}

void PrefillSide::failAwaitingProducer(const Status& why) {
  failWhere(why, [](const Request& r) {
    return !r.producerDone || std::find(r.ready.begin(), r.ready.end(), false) != r.ready.end();
  });
}

void PrefillSide::failWhere(const Status& why, const std::function<bool(const Request&)>& which) {
  std::vector<std::string> ids;
  for (auto& [id, r] : requests_) {
    if (which(r)) ids.push_back(id);
  }
  for (const std::string& id : ids) {
    Request* r = find(id);
    if (r == nullptr) continue;
    r->producerDone = true;  // shutdown: the caller produces no more
    if (r->failing) {
      maybeFinish(id);
    } else {
      fail(*r, why, true);
    }
  }
}

}  // namespace kvx::kv::handoff
