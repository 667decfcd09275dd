// DecodeSide: how requests end in failure: the abort handshake, peer loss, leases.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/handoff/decode_side.h"

namespace kvx::agent::handoff {

void DecodeSide::fail(Request& r, Status why, bool tellPeer) {
  if (r.failing) return;
  r.failing = true;
  r.view.status = std::move(why);
  leases_.revoke(r.view.id);
  context_.board.withdrawArrival(r.view.id);
  r.moves.cancelAll(context_.port);
  r.abortPending = tellPeer;
  r.ackOwed = !tellPeer;
  spdlog::debug("{}: request '{}' failing: {}", context_.name, r.view.id, r.view.status.toString());
  maybeFinishFailure(r.view.id);
}

void DecodeSide::maybeFinishFailure(const std::string& id) {
  Request* r = find(id);
  if (r == nullptr || !r->failing || !r->moves.empty()) return;
  // Our own reads have drained: only now may the prefill side reuse its blocks.
  const bool alive = peers_.contains(r->peer);
  if (r->abortPending && alive) {
    (void)context_.port.send(r->peer, AbortMsg{id, r->view.status});
    // In PUSH the prefill side may still be writing into our blocks until it acknowledges.
    r->awaitingAck = r->place.mode == KvMode::kPush;
    r->ackDeadline = Clock::now() + context_.options.leaseTimeout;
  }
  r->abortPending = false;
  if (r->awaitingAck) return;
  returnBlocks(*r, false);
  if (r->ackOwed && alive) {
    (void)context_.port.send(r->peer, AbortAckMsg{id, availableBlocks()});
  }
  r->view.state = KvRequestState::kFailed;
  publish(*r);
  requests_.erase(id);
  broadcastCapacity();
}

void DecodeSide::onPeerGone(const std::string& peer, const Status& why) {
  peers_.erase(peer);
  std::vector<std::string> affected;
  for (auto& [id, r] : requests_) {
    if (r.peer == peer) affected.push_back(id);
  }
  for (const std::string& id : affected) {
    Request& r = requests_.at(id);
    r.awaitingAck = false;
    if (r.view.state == KvRequestState::kComplete || r.view.state == KvRequestState::kConsumed) {
      continue;  // the data is here; the server still owns the blocks
    }
    if (r.failing) {
      maybeFinishFailure(id);
    } else {
      fail(r, peerFailed("prefill agent '" + peer + "' failed: " + why.message()), false);
    }
  }
}

void DecodeSide::onTick() {
  for (const std::string& id : leases_.takeExpired(Clock::now())) {
    Request* r = find(id);
    if (r == nullptr) continue;
    fail(*r,
         timedOut("the lease of request '" + id + "' expired while it was " +
                  std::string(toString(r->view.state))),
         r->view.state != KvRequestState::kComplete);
  }
  const auto now = Clock::now();
  std::vector<std::string> ackLost;
  for (auto& [id, r] : requests_) {
    if (r.failing && r.awaitingAck && now >= r.ackDeadline) ackLost.push_back(id);
  }
  for (const std::string& id : ackLost) {
    Request* r = find(id);
    if (r == nullptr || !r->awaitingAck) continue;
    // Freeing now could let the peer's late writes land in reused blocks: cut it off first.
    const std::string peer = r->peer;
    const Status why = peerFailed("prefill agent '" + peer +
                                  "' did not acknowledge the abort of '" + id + "' in time");
    spdlog::warn("{}: {}; disconnecting it", context_.name, why.message());
    context_.port.disconnect(peer, why);
    onPeerGone(peer, why);
  }
}

void DecodeSide::failAll(const Status& why) {
  std::vector<std::string> ids;
  for (auto& [id, r] : requests_) ids.push_back(id);
  for (const std::string& id : ids) {
    Request* r = find(id);
    if (r == nullptr) continue;
    if (r->view.state == KvRequestState::kComplete || r->view.state == KvRequestState::kConsumed) {
      continue;  // handed to the server already
    }
    fail(*r, why, true);
  }
}

}  // namespace kvx::agent::handoff
