// DecodeSide: how requests end in failure: the abort handshake of each part, peer loss,
// leases.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "kv/handoff/decode_side.h"

namespace kvx::kv::handoff {

void DecodeSide::failGroup(Group& g, Status why, const PartKey* trigger, bool tellTrigger) {
  if (g.failing) return;
  g.failing = true;
  g.view.status = std::move(why);
  const std::string id = g.view.id;
  leases_.revoke(id);
  context_.board.withdrawArrival(id);
  spdlog::debug("{}: request '{}' failing: {}", context_.name, id, g.view.status.toString());
  const std::vector<PartKey> members = g.members;
  for (const PartKey& key : members) {
    Part* p = findPart(key);
    if (p == nullptr) continue;
    if (p->confirmed) {
      parts_.erase(key);  // its data is in place and its prefill agent is done with it
      continue;
    }
    failPart(key, *p, trigger != nullptr && key == *trigger ? tellTrigger : true);
  }
  maybeFinishGroup(id);
}

void DecodeSide::failPart(const PartKey& key, Part& part, bool tellPeer) {
  part.failing = true;
  part.moves.cancelAll(context_.port);
  part.abortPending = tellPeer;
  part.ackOwed = !tellPeer;
  maybeFinishPart(key);
}

void DecodeSide::maybeFinishPart(const PartKey& key) {
  Part* p = findPart(key);
  if (p == nullptr || !p->failing || !p->moves.empty()) return;
  // Our own reads have drained: only now may the prefill side reuse its blocks.
  const bool alive = peers_.contains(key.first);
  if (p->abortPending && alive) {
    (void)context_.port.send(
        key.first, AbortMsg{key.second, groups_.at(p->group).view.status, p->place.attempt});
    // In PUSH the prefill side may still be writing into our blocks until it acknowledges.
    p->awaitingAck = p->place.mode == KvMode::kPush;
    p->ackDeadline = Clock::now() + context_.options.leaseTimeout;
  }
  p->abortPending = false;
  if (p->awaitingAck) return;
  if (p->ackOwed && alive) {
    (void)context_.port.send(key.first,
                             AbortAckMsg{key.second, availableBlocks(), p->place.attempt});
  }
  parts_.erase(key);
}

void DecodeSide::maybeFinishGroup(const std::string& id) {
  Group* g = findGroup(id);
  if (g == nullptr || !g->failing) return;
  for (const PartKey& key : g->members) {
    if (parts_.contains(key)) return;  // still draining or awaiting an acknowledgement
  }
  // A lost PUSH peer's last bytes may still be queued here: keep its blocks a while, and,
  // where it writes directly, until it is proven to have stopped.
  returnBlocks(*g, false, g->lostPush ? context_.options.lostPushHold : Clock::duration::zero(),
               std::move(g->lostWriters));
  g->view.state = KvRequestState::kFailed;
  publish(*g);
  groups_.erase(id);
  broadcastCapacity();
}

void DecodeSide::onPeerGone(const std::string& peer, const Status& why) {
  peers_.erase(peer);
  held_.lost(peer);
  PeerWriter writer;
  if (auto it = writers_.find(peer); it != writers_.end()) {
    writer = std::move(it->second);
    writers_.erase(it);
  }
  std::vector<PartKey> affected;
  for (const auto& [key, part] : parts_) {
    if (key.first == peer) affected.push_back(key);
  }
  for (const PartKey& key : affected) {
    Part* p = findPart(key);
    if (p == nullptr) continue;
    p->awaitingAck = false;
    if (p->confirmed) continue;  // its data is here; the server will release it
    const std::string group = p->group;
    if (p->place.mode == KvMode::kPush) {
      Group& g = groups_.at(group);
      g.lostPush = true;
      if (writer.writesDirectly) {
        LostWriter lost{peer, key.second, writer};
        lost.attempt = p->place.attempt;
        g.lostWriters.push_back(std::move(lost));
      }
    }
    if (p->failing) {
      maybeFinishPart(key);
      maybeFinishGroup(group);
    } else {
      failGroup(groups_.at(group),
                peerFailed("prefill agent '" + peer + "' failed: " + why.message()), &key, false);
    }
  }
}

void DecodeSide::onTick() {
  releaseHeld(Clock::now());
  for (const std::string& id : leases_.takeExpired(Clock::now())) {
    Group* g = findGroup(id);
    if (g == nullptr) continue;
    failGroup(*g,
              timedOut("the lease of request '" + id + "' expired while it was " +
                       std::string(toString(g->view.state))),
              nullptr, true);
  }
  const auto now = Clock::now();
  std::vector<PartKey> ackLost;
  for (const auto& [key, p] : parts_) {
    if (p.failing && p.awaitingAck && now >= p.ackDeadline) ackLost.push_back(key);
  }
  for (const auto& [peer, id] : ackLost) {
    if (!peers_.contains(peer)) continue;  // cut off already, for another part
    // Freeing now could let the peer's late writes land in reused blocks: cut it off first.
    const Status why = peerFailed("prefill agent '" + peer +
                                  "' did not acknowledge the abort of '" + id + "' in time");
    spdlog::warn("{}: {}; disconnecting it", context_.name, why.message());
    context_.port.disconnect(peer, why);
    onPeerGone(peer, why);
  }
}

Result<std::uint64_t> DecodeSide::giveBackHeld(const std::string& peer) {
  if (!peer.empty() && writers_.contains(peer)) {
    return notFound("'" + peer +
                    "' is joined now: its writes are not lost (abort its requests "
                    "instead)");
  }
  // One writer, or (empty) every lost writer that is not joined now.
  std::vector<std::string> lost{peer};
  if (peer.empty()) {
    lost.clear();
    for (const std::string& writer : held_.writers()) {
      if (!writers_.contains(writer)) lost.push_back(writer);
    }
  }
  std::uint64_t total = 0;
  for (const std::string& writer : lost) {
    const std::uint64_t blocks = held_.forgetWriter(writer);
    if (blocks == 0) continue;
    spdlog::warn(
        "{}: the operator gave back {} blocks held for '{}' without proof that it "
        "stopped writing: if it still runs, its late writes may land in other requests",
        context_.name, blocks, writer);
    total += blocks;
  }
  if (total > 0) releaseHeld(Clock::now());
  return total;
}

void DecodeSide::releaseHeld(Clock::time_point now) {
  const std::vector<HeldBlocks::Released> released = held_.takeReleasable(now);
  for (const HeldBlocks::Released& r : released) {
    spdlog::debug("{}: the held blocks of '{}' go back to the pool", context_.name, r.id);
    if (Status s = freeBlocks(r.extents); !s.isOk()) {
      spdlog::error("{}: freeing the held blocks of '{}': {}", context_.name, r.id, s.toString());
    }
  }
  if (!released.empty()) broadcastCapacity();
}

bool DecodeSide::handedOut(const Group& g) {
  return g.view.state == KvRequestState::kComplete || g.view.state == KvRequestState::kConsumed;
}

void DecodeSide::releaseHandedOut() {
  std::vector<std::string> ids;
  for (const auto& [id, g] : groups_) {
    if (handedOut(g)) ids.push_back(id);
  }
  for (const std::string& id : ids) (void)release(id);
}

void DecodeSide::failAll(const Status& why) {
  std::vector<std::string> ids;
  for (const auto& [id, g] : groups_) ids.push_back(id);
  for (const std::string& id : ids) {
    Group* g = findGroup(id);
    if (g == nullptr) continue;
    if (handedOut(*g)) continue;  // the server's to release
    failGroup(*g, why, nullptr, true);
  }
}

}  // namespace kvx::kv::handoff
