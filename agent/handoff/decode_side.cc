#include "agent/handoff/decode_side.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kvx::agent::handoff {

DecodeSide::DecodeSide(SideContext& context)
    : context_(context), cache_(context.options.prefixCacheBlocks) {}

DecodeSide::Request* DecodeSide::find(const std::string& id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

void DecodeSide::publish(Request& r) { context_.board.publish(r.view, r.layersDone); }

void DecodeSide::refuse(const std::string& peer, const std::string& id, Status why,
                        bool retryable) {
  spdlog::debug("{}: refusing '{}' from '{}': {}", context_.name, id, peer, why.toString());
  (void)context_.port.send(peer, RefusedMsg{id, std::move(why), retryable, availableBlocks()});
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
  Request* r = find(*id);
  if (r == nullptr || r->peer != peer) {
    if (std::holds_alternative<AbortMsg>(message)) {
      // Aborted before its placement reached us, or after it ended: nothing to free.
      (void)context_.port.send(peer, AbortAckMsg{*id, availableBlocks()});
    } else {
      spdlog::debug("{}: message about unknown request '{}' from '{}' ignored", context_.name, *id,
                    peer);
    }
    return;
  }
  if (r->failing) {
    if (std::holds_alternative<AbortAckMsg>(message)) {
      r->awaitingAck = false;
      maybeFinishFailure(*id);
    } else if (std::holds_alternative<AbortMsg>(message)) {
      // Both gave up; the peer's abort comes after its own moves drained.
      r->awaitingAck = false;
      r->ackOwed = true;
      maybeFinishFailure(*id);
    }
    return;
  }
  if (const auto* data = std::get_if<DataMsg>(&message)) {
    if (r->place.mode != KvMode::kPush) return;
    markLayers(*r, data->layer);
  } else if (const auto* ready = std::get_if<ReadyMsg>(&message)) {
    if (r->place.mode != KvMode::kPull) return;
    readLayers(*r, ready->layer);
  } else if (const auto* abort = std::get_if<AbortMsg>(&message)) {
    if (r->view.state == KvRequestState::kComplete || r->view.state == KvRequestState::kConsumed) {
      // Every byte is here and the server may be using it: the abort crossed our confirm.
      // The prefill side's writes have drained (it aborts only after that): acknowledge.
      (void)context_.port.send(peer, AbortAckMsg{*id, availableBlocks()});
      return;
    }
    fail(*r, abort->why.withContext("prefill agent '" + peer + "' aborted '" + *id + "'"), false);
  }
}

void DecodeSide::onPlace(const std::string& peer, const PlaceMsg& m) {
  const std::uint64_t blocks = context_.pool.shape.blocksForTokens(m.tokens);
  if (!accepting_)
    return refuse(peer, m.req, cancelled("the decode agent is shutting down"), false);
  if (requests_.contains(m.req)) {
    return refuse(peer, m.req,
                  alreadyExists("request id '" + m.req + "' is live on this decode agent"), false);
  }
  if (m.blocks != blocks) {
    return refuse(
        peer, m.req,
        invalidArgument(std::to_string(m.tokens) + " tokens need " + std::to_string(blocks) +
                        " blocks; the placement says " + std::to_string(m.blocks)),
        false);
  }
  if (blocks > context_.pool.blocks) {
    return refuse(peer, m.req,
                  invalidArgument("request needs " + std::to_string(blocks) +
                                  " blocks; this pool has " + std::to_string(context_.pool.blocks)),
                  false);
  }
  std::vector<std::uint64_t> source;
  if (m.mode == KvMode::kPull) {
    source = kv::expandExtents(m.sourceBlocks);
    if (source.size() != blocks) {
      return refuse(peer, m.req,
                    invalidArgument("PULL placement lists " + std::to_string(source.size()) +
                                    " source blocks for " + std::to_string(blocks)),
                    false);
    }
  }
  // Reusable prefix: leading chunks that are full (all their tokens in the prompt) and
  // cached with exactly one chunk's blocks.
  const std::uint64_t perChunk = context_.blocksPerChunk();
  std::size_t chunks = perChunk == 0 ? 0 : cache_.matchPrefix(m.prefixHashes);
  chunks = std::min<std::size_t>(chunks, m.tokens / context_.options.prefixChunkTokens);
  Request r;
  r.peer = peer;
  r.place = m;
  r.source = std::move(source);
  std::vector<kv::BlockExtent> prefixExtents;
  if (chunks > 0) {
    r.pinnedHashes.assign(m.prefixHashes.begin(), m.prefixHashes.begin() + chunks);
    auto acquired = cache_.acquire(r.pinnedHashes);
    if (acquired.isOk()) {
      prefixExtents = std::move(acquired).value();
    } else {
      r.pinnedHashes.clear();
    }
  }
  const std::uint64_t prefixBlocks = kv::totalBlocks(prefixExtents);
  const std::uint64_t need = blocks - prefixBlocks;
  if (need > context_.allocator.freeBlocks()) {
    const auto evicted = cache_.evict(need - context_.allocator.freeBlocks());
    if (!evicted.empty()) (void)context_.allocator.free(evicted);
  }
  if (need > 0) {
    auto allocated = context_.allocator.allocate(need);
    if (!allocated.isOk()) {
      if (!r.pinnedHashes.empty()) (void)cache_.release(r.pinnedHashes);
      return refuse(peer, m.req, allocated.status(), true);
    }
    r.ownExtents = std::move(allocated).value();
  }
  r.blocks = kv::expandExtents(prefixExtents);
  const auto own = kv::expandExtents(r.ownExtents);
  r.blocks.insert(r.blocks.end(), own.begin(), own.end());
  r.layersDone.assign(layers(), false);
  r.placedAt = Clock::now();
  r.view.id = m.req;
  r.view.peer = peer;
  r.view.mode = m.mode;
  r.view.state = KvRequestState::kPlaced;
  r.view.blocks = blocks;
  r.view.prefixBlocks = prefixBlocks;
  r.view.bytes = need * context_.blockBytes();
  (void)leases_.grant(m.req, r.placedAt + std::chrono::milliseconds(m.leaseMs));
  auto [it, inserted] = requests_.emplace(m.req, std::move(r));
  Request& placed = it->second;
  publish(placed);
  PlacedMsg reply{m.req, kv::compressBlocks(placed.blocks), prefixBlocks, availableBlocks()};
  Status sent = context_.port.send(peer, reply);
  if (!sent.isOk()) fail(placed, sent, false);
}

void DecodeSide::markLayers(Request& r, std::int64_t layer) {
  if (layer == kAllLayers) {
    std::fill(r.layersDone.begin(), r.layersDone.end(), true);
    r.doneCount = layers();
  } else if (layer >= 0 && layer < layers() && !r.layersDone[layer]) {
    r.layersDone[layer] = true;
    ++r.doneCount;
  }
  if (r.view.state == KvRequestState::kPlaced) r.view.state = KvRequestState::kTransferring;
  if (r.doneCount == layers()) return complete(r);
  publish(r);
}

void DecodeSide::readLayers(Request& r, std::int64_t layer) {
  if (layer != kAllLayers && (layer < 0 || layer >= layers())) {
    return fail(r, protocolError("layer " + std::to_string(layer) + " is outside the model"), true);
  }
  const std::uint64_t skip = r.view.prefixBlocks;
  if (skip == r.blocks.size()) return markLayers(r, layer);
  if (r.view.state == KvRequestState::kPlaced) {
    r.view.state = KvRequestState::kTransferring;
    publish(r);
  }
  const std::uint32_t first = layer == kAllLayers ? 0 : static_cast<std::uint32_t>(layer);
  const std::uint32_t count = layer == kAllLayers ? layers() : 1;
  const std::string id = r.view.id;
  auto moveId = std::make_shared<MoveId>(0);
  auto moved = context_.port.move(
      r.peer, TransferOp::kRead, std::span<const std::uint64_t>(r.blocks).subspan(skip),
      std::span<const std::uint64_t>(r.source).subspan(skip), first, count, std::nullopt,
      [this, id, moveId, layer](MoveResult result) {
        context_.postToLoop([this, id, moveId, layer, result = std::move(result)] {
          onMoveDone(id, *moveId, result);  // may fail and erase the request
          Request* live = find(id);
          if (result.status.isOk() && live != nullptr && !live->failing) markLayers(*live, layer);
        });
      });
  if (!moved.isOk()) {
    return fail(r, moved.status().withContext("reading '" + id + "' from '" + r.peer + "'"), true);
  }
  *moveId = *moved;
  r.moves.add(*moved);
}

void DecodeSide::onMoveDone(const std::string& id, MoveId move, const MoveResult& result) {
  Request* r = find(id);
  if (r == nullptr) return;
  r->moves.finished(move, result, r->view);
  if (r->failing) return maybeFinishFailure(id);
  if (!result.status.isOk()) {
    fail(*r, result.status.withContext("reading '" + id + "' from '" + r->peer + "'"), true);
  }
}

void DecodeSide::complete(Request& r) {
  r.view.state = KvRequestState::kComplete;
  r.view.latency = Clock::now() - r.placedAt;
  (void)leases_.renew(r.view.id, Clock::now() + context_.options.leaseTimeout);
  publish(r);
  KvArrival arrival{r.view.id,           r.peer, r.place.tokens, r.blocks, r.view.prefixBlocks,
                    r.place.prefixHashes};
  context_.board.publishArrival(std::move(arrival));
  (void)context_.port.send(
      r.peer, ConfirmMsg{r.view.id, availableBlocks(), r.view.descriptors, r.view.operations});
}

Status DecodeSide::consume(const std::string& id) {
  Request* r = find(id);
  if (r == nullptr) return notFound("request '" + id + "' is not live on this decode agent");
  if (r->view.state != KvRequestState::kComplete) {
    return failedPrecondition("request '" + id + "' is " + std::string(toString(r->view.state)) +
                              ", not complete");
  }
  leases_.revoke(id);
  r->view.state = KvRequestState::kConsumed;
  publish(*r);
  return Status::ok();
}

Status DecodeSide::release(const std::string& id) {
  Request* r = find(id);
  if (r == nullptr) return notFound("request '" + id + "' is not live on this decode agent");
  if (r->view.state != KvRequestState::kComplete && r->view.state != KvRequestState::kConsumed) {
    return failedPrecondition("request '" + id + "' is " + std::string(toString(r->view.state)) +
                              "; only complete or consumed requests can be released");
  }
  leases_.revoke(id);
  context_.board.withdrawArrival(id);
  returnBlocks(*r, true);
  r->view.state = KvRequestState::kReleased;
  publish(*r);
  requests_.erase(id);
  broadcastCapacity();
  return Status::ok();
}

void DecodeSide::returnBlocks(Request& r, bool keepPrefixes) {
  if (!r.pinnedHashes.empty()) (void)cache_.release(r.pinnedHashes);
  std::vector<std::uint64_t> own = kv::expandExtents(r.ownExtents);
  std::vector<kv::BlockExtent> toFree;
  // Full chunks this request brought in may stay for the next request with that prefix.
  const std::uint64_t perChunk = context_.blocksPerChunk();
  const std::size_t firstChunk = r.pinnedHashes.size();
  const std::size_t fullChunks = std::min<std::size_t>(
      r.place.prefixHashes.size(), r.place.tokens / context_.options.prefixChunkTokens);
  std::size_t used = 0;
  if (keepPrefixes && perChunk > 0 && cache_.capacityBlocks() > 0) {
    for (std::size_t c = firstChunk; c < fullChunks && used + perChunk <= own.size(); ++c) {
      std::span<const std::uint64_t> chunk(own.data() + used, perChunk);
      std::vector<kv::BlockExtent> evicted;
      auto inserted = cache_.insert(r.place.prefixHashes[c], kv::compressBlocks(chunk), evicted);
      toFree.insert(toFree.end(), evicted.begin(), evicted.end());
      if (!inserted.isOk() || !*inserted) {
        auto extents = kv::compressBlocks(chunk);
        toFree.insert(toFree.end(), extents.begin(), extents.end());
      }
      used += perChunk;
    }
  }
  auto rest = kv::compressBlocks(std::span<const std::uint64_t>(own).subspan(used));
  toFree.insert(toFree.end(), rest.begin(), rest.end());
  if (!toFree.empty()) {
    Status freed = context_.allocator.free(toFree);
    if (!freed.isOk()) {
      spdlog::error("{}: freeing the blocks of '{}': {}", context_.name, r.view.id,
                    freed.toString());
    }
  }
  r.ownExtents.clear();
  r.pinnedHashes.clear();
}

Status DecodeSide::dropPrefixCache() {
  const auto evicted = cache_.evictAll();
  if (evicted.empty()) return Status::ok();
  Status freed = context_.allocator.free(evicted);
  broadcastCapacity();
  return freed;
}

std::uint64_t DecodeSide::availableBlocks() const {
  return context_.allocator.freeBlocks() + cache_.cachedBlocks() - cache_.pinnedBlocks();
}

void DecodeSide::broadcastCapacity() {
  const std::uint64_t free = availableBlocks();
  for (const std::string& peer : peers_) (void)context_.port.send(peer, CapacityMsg{free});
}

}  // namespace kvx::agent::handoff
