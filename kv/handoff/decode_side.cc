#include "kv/handoff/decode_side.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kvx::kv::handoff {

DecodeSide::DecodeSide(SideContext& context)
    : context_(context), cache_(context.options.prefixCacheBlocks) {}

DecodeSide::Group* DecodeSide::findGroup(const std::string& id) {
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : &it->second;
}

DecodeSide::Part* DecodeSide::findPart(const PartKey& key) {
  auto it = parts_.find(key);
  return it == parts_.end() ? nullptr : &it->second;
}

void DecodeSide::publish(Group& g) { context_.board.publish(g.view, g.layersDone); }

void DecodeSide::refuse(const std::string& peer, const PlaceMsg& place, Status why,
                        bool retryable) {
  spdlog::debug("{}: refusing '{}' from '{}': {}", context_.name, place.req, peer, why.toString());
  (void)context_.port.send(
      peer, RefusedMsg{place.req, std::move(why), retryable, availableBlocks(), place.attempt});
}

void DecodeSide::onMessage(const std::string& peer, const KvMessage& message) {
  if (const auto* place = std::get_if<PlaceMsg>(&message)) return onPlace(peer, *place);
  const std::string* id = std::visit(
      [](const auto& m) -> const std::string* {
        if constexpr (requires { m.req; }) {
          return &m.req;
        } else {
          return nullptr;
        }
      },
      message);
  if (id == nullptr) return;
  const PartKey key{peer, *id};
  Part* part = findPart(key);
  const auto* abort = std::get_if<AbortMsg>(&message);
  const auto* ack = std::get_if<AbortAckMsg>(&message);
  // A message about an earlier placement of this id (held blocks, say, or data of the
  // session before a lost link) is not about the part placed now.
  if (part != nullptr && !sameAttempt(attemptOf(message), part->place.attempt)) part = nullptr;
  if (part == nullptr) {
    if (abort != nullptr) {
      // Aborted before its placement reached us, or after it ended: nothing to free.
      (void)context_.port.send(peer, AbortAckMsg{*id, availableBlocks(), abort->attempt});
    } else if (ack != nullptr && held_.acknowledged(peer, *id, ack->attempt)) {
      // A lost writer, back, has drained its moves of a held request.
      releaseHeld(Clock::now());
    } else {
      spdlog::debug("{}: message about unknown request '{}' from '{}' ignored", context_.name, *id,
                    peer);
    }
    return;
  }
  onPartMessage(key, *part, message);
}

void DecodeSide::onPartMessage(const PartKey& key, Part& part, const KvMessage& message) {
  if (part.failing) {
    if (std::holds_alternative<AbortAckMsg>(message)) {
      part.awaitingAck = false;
    } else if (std::holds_alternative<AbortMsg>(message)) {
      // Both gave up; the peer's abort comes after its own moves drained.
      part.awaitingAck = false;
      part.ackOwed = true;
    } else {
      return;
    }
    const std::string group = part.group;
    maybeFinishPart(key);
    maybeFinishGroup(group);
    return;
  }
  if (const auto* data = std::get_if<DataMsg>(&message)) {
    if (part.place.mode == KvMode::kPush) markLayers(key, data->layer);
  } else if (const auto* ready = std::get_if<ReadyMsg>(&message)) {
    if (part.place.mode == KvMode::kPull) readLayers(key, ready->layer);
  } else if (const auto* abort = std::get_if<AbortMsg>(&message)) {
    if (part.confirmed) {
      // Every byte of this part is here: the abort crossed our confirm. The prefill side's
      // writes have drained (it aborts only after that): acknowledge.
      (void)context_.port.send(key.first,
                               AbortAckMsg{key.second, availableBlocks(), part.place.attempt});
      return;
    }
    failGroup(
        groups_.at(part.group),
        abort->why.withContext("prefill agent '" + key.first + "' aborted '" + key.second + "'"),
        &key, false);
  }
}

void DecodeSide::markLayers(const PartKey& key, std::int64_t layer) {
  Part& p = parts_.at(key);
  Group& g = groups_.at(p.group);
  if (layer == kAllLayers) {
    std::fill(p.layersDone.begin(), p.layersDone.end(), true);
    p.doneCount = layers();
  } else if (layer >= 0 && layer < layers() && !p.layersDone[layer]) {
    p.layersDone[layer] = true;
    ++p.doneCount;
  }
  if (g.view.state == KvRequestState::kPlaced) g.view.state = KvRequestState::kTransferring;
  const bool allPlaced = g.members.size() == g.parts;
  for (std::uint32_t l = 0; l < layers(); ++l) {
    g.layersDone[l] =
        allPlaced && std::all_of(g.members.begin(), g.members.end(), [&](const PartKey& m) {
          const Part* member = findPart(m);
          return member != nullptr && member->layersDone[l];
        });
  }
  if (p.doneCount == layers() && !p.confirmed) return confirmPart(key, p, g);
  publish(g);
}

void DecodeSide::readLayers(const PartKey& key, std::int64_t layer) {
  Part& p = parts_.at(key);
  Group& g = groups_.at(p.group);
  if (layer != kAllLayers && (layer < 0 || layer >= layers())) {
    return failGroup(g, protocolError("layer " + std::to_string(layer) + " is outside the model"),
                     &key, true);
  }
  const std::uint64_t skip = g.view.prefixBlocks;
  if (skip == g.blocks.size()) return markLayers(key, layer);
  if (g.view.state == KvRequestState::kPlaced) {
    g.view.state = KvRequestState::kTransferring;
    publish(g);
  }
  const std::uint32_t first = layer == kAllLayers ? 0 : static_cast<std::uint32_t>(layer);
  const std::uint32_t count = layer == kAllLayers ? layers() : 1;
  auto moveId = std::make_shared<MoveId>(0);
  MoveSpec spec{key.first,
                TransferOp::kRead,
                std::span<const std::uint64_t>(g.blocks).subspan(skip),
                std::span<const std::uint64_t>(p.source).subspan(skip),
                first,
                count,
                kv::HeadSlice{p.place.dstHeadFirst, p.place.srcHeadFirst, p.place.headCount},
                std::nullopt};
  auto moved = context_.port.move(spec, [this, key, moveId, layer](MoveResult result) {
    context_.postToLoop([this, key, moveId, layer, result = std::move(result)] {
      onMoveDone(key, *moveId, result);  // may fail the request and erase the part
      Part* live = findPart(key);
      if (result.status.isOk() && live != nullptr && !live->failing) markLayers(key, layer);
    });
  });
  if (!moved.isOk()) {
    return failGroup(
        g, moved.status().withContext("reading '" + key.second + "' from '" + key.first + "'"),
        &key, true);
  }
  *moveId = *moved;
  p.moves.add(*moved);
}

void DecodeSide::onMoveDone(const PartKey& key, MoveId move, const MoveResult& result) {
  Part* p = findPart(key);
  if (p == nullptr) return;
  p->moves.finished(move, result);
  Group& g = groups_.at(p->group);
  g.view.descriptors += result.stats.descriptors;
  g.view.operations += result.stats.operations;
  if (p->failing) {
    const std::string group = p->group;
    maybeFinishPart(key);
    maybeFinishGroup(group);
    return;
  }
  if (!result.status.isOk()) {
    failGroup(g, result.status.withContext("reading '" + key.second + "' from '" + key.first + "'"),
              &key, true);
  }
}

void DecodeSide::confirmPart(const PartKey& key, Part& part, Group& g) {
  part.confirmed = true;
  ++g.confirmedParts;
  if (g.confirmedParts == g.parts) {
    g.view.state = KvRequestState::kComplete;
    g.view.latency = Clock::now() - g.placedAt;
    (void)leases_.renew(g.view.id, Clock::now() + context_.options.leaseTimeout);
    KvArrival arrival{g.view.id,           key.first,     {}, g.tokens, g.blocks,
                      g.view.prefixBlocks, g.prefixHashes};
    for (const PartKey& member : g.members) arrival.peers.push_back(member.first);
    arrival.peer = arrival.peers.front();
    context_.board.publishArrival(std::move(arrival));
  }
  publish(g);
  // The prefill agent may free its source blocks now: its share is in place.
  (void)context_.port.send(key.first,
                           ConfirmMsg{key.second, availableBlocks(), part.moves.descriptors(),
                                      part.moves.operations(), part.place.attempt});
}

Status DecodeSide::consume(const std::string& id) {
  Group* g = findGroup(id);
  if (g == nullptr) return notFound("request '" + id + "' is not live on this decode agent");
  if (g->view.state != KvRequestState::kComplete) {
    return failedPrecondition("request '" + id + "' is " + std::string(toString(g->view.state)) +
                              ", not complete");
  }
  leases_.revoke(id);
  g->view.state = KvRequestState::kConsumed;
  publish(*g);
  return Status::ok();
}

Status DecodeSide::release(const std::string& id) {
  Group* g = findGroup(id);
  if (g == nullptr) return notFound("request '" + id + "' is not live on this decode agent");
  if (!handedOut(*g)) {
    return failedPrecondition("request '" + id + "' is " + std::string(toString(g->view.state)) +
                              "; only complete or consumed requests can be released");
  }
  leases_.revoke(id);
  context_.board.withdrawArrival(id);
  returnBlocks(*g, true);
  g->view.state = KvRequestState::kReleased;
  publish(*g);
  for (const PartKey& member : g->members) parts_.erase(member);
  groups_.erase(id);
  broadcastCapacity();
  return Status::ok();
}

Status DecodeSide::dropPrefixCache() {
  const auto evicted = cache_.evictAll();
  if (evicted.empty()) return Status::ok();
  Status freed = freeBlocks(evicted);
  broadcastCapacity();
  return freed;
}

std::uint64_t DecodeSide::availableBlocks() const {
  return context_.allocator.freeBlocks() + cache_.cachedBlocks() - cache_.pinnedBlocks();
}

void DecodeSide::onPeerReady(const std::string& peer, PeerWriter writer) {
  peers_.insert(peer);
  (void)context_.port.send(peer, CapacityMsg{availableBlocks()});
  writers_[peer] = std::move(writer);
  askHeldWriters();
}

void DecodeSide::askHeldWriters() {
  for (const auto& [peer, writer] : writers_) {
    for (const HeldAbort& held : held_.rejoined(peer, writer.incarnation)) {
      const std::string& id = held.request;
      spdlog::info(
          "{}: prefill agent '{}' is back: asking it to abort '{}', whose blocks are held "
          "until it answers",
          context_.name, peer, id);
      (void)context_.port.send(
          peer, AbortMsg{id,
                         peerFailed("decode agent '" + context_.name + "' lost '" + peer +
                                    "' while it pushed '" + id + "'"),
                         held.attempt});
    }
  }
}

void DecodeSide::broadcastCapacity() {
  const std::uint64_t free = availableBlocks();
  for (const std::string& peer : peers_) (void)context_.port.send(peer, CapacityMsg{free});
}

}  // namespace kvx::kv::handoff
