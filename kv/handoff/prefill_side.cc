#include "kv/handoff/prefill_side.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kvx::kv::handoff {

PrefillSide::PrefillSide(SideContext& context)
    : context_(context),
      scheduler_(placement::SchedulerOptions{context.options.maxInFlightBytesPerPeer, 65536}),
      queue_(context.options.queueCapacity) {}

PrefillSide::Request* PrefillSide::find(const std::string& id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

void PrefillSide::publish(Request& r) { context_.board.publish(r.view); }

Status PrefillSide::sendFailure(const std::string& peer, Status sent) {
  // The data path forgets a failed peer before its departure reaches this thread: the
  // request failed because the peer did, which is what its caller should read.
  if (sent.code() != StatusCode::kNotFound) return sent;
  return peerFailed("decode agent '" + peer + "' is gone: " + sent.message());
}

Status PrefillSide::submit(const KvRequestSpec& spec) {
  KVX_RETURN_IF_ERROR(checkRequestId(spec.id));
  if (requests_.contains(spec.id)) {
    return alreadyExists("request '" + spec.id + "' is live already; ids must be unique");
  }
  if (spec.tokens == 0) return invalidArgument("request '" + spec.id + "' has 0 tokens");
  const std::uint64_t blocks = context_.pool.shape.blocksForTokens(spec.tokens);
  if (spec.sourceBlocks.size() != blocks) {
    return invalidArgument("request '" + spec.id + "': " + std::to_string(spec.tokens) +
                           " tokens need " + std::to_string(blocks) + " blocks of " +
                           std::to_string(context_.pool.shape.tokensPerBlock) + " tokens; got " +
                           std::to_string(spec.sourceBlocks.size()));
  }
  std::vector<std::uint64_t> sorted = spec.sourceBlocks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] >= context_.pool.blocks || context_.allocator.isFree(sorted[i]) ||
        (i > 0 && sorted[i] == sorted[i - 1])) {
      return invalidArgument("request '" + spec.id + "': source block " +
                             std::to_string(sorted[i]) +
                             " is out of the pool, not allocated, or listed twice");
    }
  }
  KVX_RETURN_IF_ERROR(checkSlice(spec));
  Request r;
  r.spec = spec;
  r.mode = spec.mode.value_or(context_.options.defaultMode);
  r.submitted = Clock::now();
  const auto timeout = spec.timeout.count() > 0 ? spec.timeout : context_.options.requestTimeout;
  r.deadline = r.submitted + timeout;
  r.ready.assign(layers(), !spec.layerwise);
  r.producerDone = !spec.layerwise || !spec.keepSourceForProducer;
  r.sent.assign(layers(), false);
  r.bytesEstimate = blocks * slicedBlockBytes(spec);
  r.view.id = spec.id;
  r.view.state = KvRequestState::kQueued;
  r.view.mode = r.mode;
  r.view.blocks = blocks;
  auto [it, inserted] = requests_.emplace(spec.id, std::move(r));
  publish(it->second);
  tryPlace(it->second);
  return Status::ok();
}

Status PrefillSide::checkSlice(const KvRequestSpec& spec) const {
  if (!spec.slice) return Status::ok();
  const KvSlice& slice = *spec.slice;
  const std::uint32_t heads = context_.pool.shape.kvHeads;
  if (!spec.destination) {
    return invalidArgument("request '" + spec.id +
                           "' is sliced: name its destination (tensor-parallel ranks are not "
                           "interchangeable)");
  }
  if (slice.heads == 0 || slice.sourceFirstHead >= heads ||
      slice.heads > heads - slice.sourceFirstHead) {
    return invalidArgument("request '" + spec.id + "': source heads [" +
                           std::to_string(slice.sourceFirstHead) + ", +" +
                           std::to_string(slice.heads) + ") are not within this pool's " +
                           std::to_string(heads));
  }
  if (slice.sources == 0 || slice.sources > kMaxGatherParts) {
    return invalidArgument("request '" + spec.id + "': a destination request gathers from 1 to " +
                           std::to_string(kMaxGatherParts) + " sources, not " +
                           std::to_string(slice.sources));
  }
  if (!slice.destinationId.empty()) KVX_RETURN_IF_ERROR(checkRequestId(slice.destinationId));
  return Status::ok();
}

std::uint64_t PrefillSide::slicedBlockBytes(const KvRequestSpec& spec) const {
  const std::uint64_t whole = context_.blockBytes();
  if (!spec.slice) return whole;
  return whole / context_.pool.shape.kvHeads * spec.slice->heads;
}

kv::HeadSlice PrefillSide::sliceOf(const KvRequestSpec& spec) {
  if (!spec.slice) return {};
  return {spec.slice->sourceFirstHead, spec.slice->destinationFirstHead, spec.slice->heads};
}

void PrefillSide::tryPlace(Request& r) {
  placement::PlacementQuery query{r.spec.id,
                                  r.view.blocks,
                                  r.bytesEstimate,
                                  r.spec.prefixHashes,
                                  context_.blocksPerChunk(),
                                  r.spec.destination,
                                  r.spec.slice ? 0 : context_.pool.shape.kvHeads,
                                  r.spec.slice && r.spec.slice->sources > 1};
  placement::PlacementDecision d = scheduler_.decide(query);
  if (d.verdict == placement::Verdict::kRefuse && d.status.code() == StatusCode::kNotFound &&
      r.spec.destination && context_.options.reconnect && redialed_.contains(*r.spec.destination)) {
    // Its destination was lost and is being dialed again: wait for it until the deadline.
    d.verdict = placement::Verdict::kWait;
    d.status = resourceExhausted("decode agent '" + *r.spec.destination +
                                 "' was lost and is being dialed again");
  }
  if (d.verdict == placement::Verdict::kRefuse) {
    queue_.remove(r.spec.id);
    fail(r, d.status, false);
    return;
  }
  if (d.verdict == placement::Verdict::kWait) {
    r.waitReason = d.status.message();
    if (!queue_.contains(r.spec.id)) {
      Status queued = queue_.push(r.spec.id, r.deadline);
      if (!queued.isOk()) fail(r, queued, false);
    }
    return;
  }
  queue_.remove(r.spec.id);
  PlaceMsg place;
  place.req = r.spec.id;
  r.attempt = ++lastAttempt_;
  place.attempt = r.attempt;
  place.tokens = r.spec.tokens;
  place.blocks = r.view.blocks;
  place.prefixHashes = r.spec.prefixHashes;
  place.mode = r.mode;
  place.layerwise = r.spec.layerwise;
  place.leaseMs = static_cast<std::uint64_t>(context_.options.leaseTimeout.count());
  if (r.mode == KvMode::kPull) place.sourceBlocks = kv::compressBlocks(r.spec.sourceBlocks);
  if (r.spec.slice) {
    place.srcHeadFirst = r.spec.slice->sourceFirstHead;
    place.dstHeadFirst = r.spec.slice->destinationFirstHead;
    place.headCount = r.spec.slice->heads;
    place.group = r.spec.slice->destinationId;
    place.parts = r.spec.slice->sources;
  }
  Status sent = context_.port.send(d.peer, place);
  if (!sent.isOk()) {
    fail(r,
         sendFailure(d.peer, std::move(sent))
             .withContext("sending the placement of '" + r.spec.id + "' to '" + d.peer + "'"),
         false);
    return;
  }
  r.placing = true;
  r.view.peer = d.peer;
  r.view.placement = d.reason;
  r.expectedPrefixBlocks = d.expectedPrefixChunks * context_.blocksPerChunk();
  std::uint64_t reserve = r.view.blocks - std::min(r.view.blocks, r.expectedPrefixBlocks);
  if (r.spec.slice) reserve /= r.spec.slice->sources;  // the parts share one reservation
  scheduler_.recordPlaced(d.peer, reserve, r.bytesEstimate, r.spec.prefixHashes);
  spdlog::debug("{}: request '{}' ({} blocks) -> '{}': {}", context_.name, r.spec.id, r.view.blocks,
                d.peer, d.reason);
}

void PrefillSide::retryQueued() {
  for (const std::string& id : queue_.ids()) {
    if (Request* r = find(id)) tryPlace(*r);
  }
}

Status PrefillSide::layerReady(const std::string& id, std::uint32_t layer) {
  Request* r = find(id);
  if (r == nullptr) return notFound("request '" + id + "' is not live");
  if (!r->spec.layerwise) {
    return failedPrecondition("request '" + id + "' was not submitted layer-wise");
  }
  if (layer >= layers()) {
    return invalidArgument("layer " + std::to_string(layer) + " is outside the model's " +
                           std::to_string(layers()));
  }
  if (r->failing && !r->producerDone) {
    // The producer is done with the source blocks: they may go back now.
    r->producerDone = true;
    const Status why = r->view.status;
    maybeFinish(id);
    return failedPrecondition("request '" + id + "' has failed: " + why.toString());
  }
  if (r->ready[layer]) {
    return failedPrecondition("layer " + std::to_string(layer) + " of '" + id +
                              "' was handed over already");
  }
  r->ready[layer] = true;
  if (std::all_of(r->ready.begin(), r->ready.end(), [](bool b) { return b; })) {
    r->producerDone = true;
  }
  if (r->placed && !r->failing) startMoves(*r);
  return Status::ok();
}

Status PrefillSide::cancel(const std::string& id, Status why) {
  Request* r = find(id);
  if (r == nullptr) return notFound("request '" + id + "' is not live");
  if (r->confirmed) {
    return failedPrecondition("request '" + id + "' is complete at its destination already");
  }
  const bool releaseSource = !r->producerDone;
  r->producerDone = true;  // the producer stops writing when it cancels
  fail(*r, std::move(why), true);
  if (releaseSource) maybeFinish(id);
  return Status::ok();
}

void PrefillSide::onPeerReady(const std::string& peer, std::uint64_t totalBlocks,
                              std::uint64_t freeBlocks, std::uint32_t kvHeads) {
  peersAlive_[peer] = true;
  redialed_.erase(peer);
  scheduler_.upsertPeer(peer, totalBlocks, freeBlocks, kvHeads);
  retryQueued();
}

void PrefillSide::onMessage(const std::string& peer, const KvMessage& message) {
  const auto reqOf = [](const auto& m) -> const std::string& { return m.req; };
  if (const auto* capacity = std::get_if<CapacityMsg>(&message)) {
    updateFree(peer, capacity->freeBlocks);
    retryQueued();
    return;
  }
  const std::string* id = std::visit(
      [&](const auto& m) -> const std::string* {
        if constexpr (requires { m.req; }) {
          return &reqOf(m);
        } else {
          return nullptr;
        }
      },
      message);
  if (id == nullptr) return;
  Request* r = find(*id);
  const auto* abort = std::get_if<AbortMsg>(&message);
  const auto* ack = std::get_if<AbortAckMsg>(&message);
  // A message may be about an earlier placement of this request (a "placed" of the session
  // before a lost link, held over for the next one) or about an earlier request of this id
  // (an abort of blocks the decode side held): not about this one.
  if (r == nullptr || r->view.peer != peer || !sameAttempt(attemptOf(message), r->attempt)) {
    if (abort != nullptr) {
      // Ended here, or never placed with this peer: no move of ours to it is left (a request
      // is forgotten only once its moves drained), so the answer is at once. A decode agent
      // that lost us mid-push holds the request's blocks until it has this answer.
      (void)context_.port.send(peer, AbortAckMsg{*id, 0, abort->attempt});
      return;
    }
    spdlog::debug("{}: message about unknown request '{}' from '{}' ignored", context_.name, *id,
                  peer);
    return;
  }
  if (const auto* placed = std::get_if<PlacedMsg>(&message)) return onPlaced(*r, *placed);
  if (const auto* refused = std::get_if<RefusedMsg>(&message)) return onRefused(*r, *refused);
  if (const auto* confirm = std::get_if<ConfirmMsg>(&message)) return onConfirm(*r, *confirm);
  if (abort != nullptr) {
    r->awaitingAck = false;
    r->ackOwed = true;  // sent once our own writes have drained
    if (r->failing) return maybeFinish(*id);
    fail(*r, abort->why.withContext("decode agent '" + peer + "' aborted '" + *id + "'"), false);
    return;
  }
  if (ack != nullptr) {
    r->awaitingAck = false;
    maybeFinish(*id);
  }
}

void PrefillSide::updateFree(const std::string& peer, std::uint64_t freeBlocks) {
  if (auto view = scheduler_.peer(peer)) scheduler_.upsertPeer(peer, view->totalBlocks, freeBlocks);
}

void PrefillSide::onRefused(Request& r, const RefusedMsg& m) {
  const std::string peer = r.view.peer;
  updateFree(peer, m.freeBlocks);
  scheduler_.recordFinished(peer, r.bytesEstimate);
  r.placing = false;
  r.view.peer.clear();
  if (r.failing) {
    r.awaitingAck = false;
    maybeFinish(r.spec.id);
  } else if (m.retryable) {
    // Retried when capacity changes, not at once: an immediate retry could meet the same
    // refusal over and over.
    if (r.expectedPrefixBlocks > 0) scheduler_.forgetPrefixes(peer, r.spec.prefixHashes);
    r.waitReason = "'" + peer + "' refused it: " + m.why.message();
    Status queued = queue_.push(r.spec.id, r.deadline);
    if (!queued.isOk()) fail(r, queued, false);
  } else {
    fail(r, m.why.withContext("decode agent '" + peer + "' refused '" + r.spec.id + "'"), false);
  }
}

void PrefillSide::onConfirm(Request& r, const ConfirmMsg& m) {
  updateFree(r.view.peer, m.freeBlocks);
  // A confirmation that crossed our abort: the caller was told of the failure already; the
  // decode side answers the abort all the same.
  if (r.failing) return maybeFinish(r.spec.id);
  if (r.mode == KvMode::kPull) {
    r.view.descriptors = m.descriptors;
    r.view.operations = m.operations;
  }
  r.confirmed = true;
  r.view.state = KvRequestState::kComplete;
  r.view.latency = Clock::now() - r.submitted;
  publish(r);
  maybeFinish(r.spec.id);
}

void PrefillSide::onPlaced(Request& r, const PlacedMsg& m) {
  if (r.failing || r.placed) return;
  r.destination = kv::expandExtents(m.blocks);
  if (r.destination.size() != r.view.blocks || m.prefixBlocks > r.view.blocks) {
    fail(r,
         protocolError("decode agent '" + r.view.peer + "' placed '" + r.spec.id + "' on " +
                       std::to_string(r.destination.size()) + " blocks (" +
                       std::to_string(m.prefixBlocks) + " reused); it needs " +
                       std::to_string(r.view.blocks)),
         true);
    return;
  }
  updateFree(r.view.peer, m.freeBlocks);
  r.placing = false;
  r.placed = true;
  r.view.prefixBlocks = m.prefixBlocks;
  r.view.bytes = (r.view.blocks - m.prefixBlocks) * slicedBlockBytes(r.spec);
  r.view.queued = Clock::now() - r.submitted;
  r.view.state = KvRequestState::kPlaced;
  publish(r);
  startMoves(r);
}

void PrefillSide::startMoves(Request& r) {
  if (!r.spec.layerwise) {
    if (!r.sent[0]) {
      std::fill(r.sent.begin(), r.sent.end(), true);
      moveLayers(r, kAllLayers);
    }
    return;
  }
  // A failing move may finish the request and erase it: look it up again after each one.
  const std::string id = r.spec.id;
  for (std::uint32_t layer = 0; layer < layers(); ++layer) {
    Request* live = find(id);
    if (live == nullptr || live->failing) return;
    if (live->ready[layer] && !live->sent[layer]) {
      live->sent[layer] = true;
      moveLayers(*live, layer);
    }
  }
}

void PrefillSide::moveLayers(Request& r, std::int64_t layer) {
  if (r.view.state == KvRequestState::kPlaced) {
    r.view.state = KvRequestState::kTransferring;
    publish(r);
  }
  const std::string& peer = r.view.peer;
  if (r.mode == KvMode::kPull) {
    Status sent = context_.port.send(peer, ReadyMsg{r.spec.id, layer, r.attempt});
    if (!sent.isOk()) fail(r, sendFailure(peer, std::move(sent)), true);
    return;
  }
  const std::uint64_t skip = r.view.prefixBlocks;
  if (skip == r.view.blocks) {  // everything is at the destination already
    Status sent = context_.port.send(peer, DataMsg{r.spec.id, layer, r.attempt});
    if (!sent.isOk()) fail(r, sendFailure(peer, std::move(sent)), true);
    return;
  }
  const std::uint32_t first = layer == kAllLayers ? 0 : static_cast<std::uint32_t>(layer);
  const std::uint32_t count = layer == kAllLayers ? layers() : 1;
  std::span<const std::uint64_t> src(r.spec.sourceBlocks);
  std::span<const std::uint64_t> dst(r.destination);
  const std::string id = r.spec.id;
  auto moveId = std::make_shared<MoveId>(0);
  MoveSpec spec{peer,
                TransferOp::kWrite,
                src.subspan(skip),
                dst.subspan(skip),
                first,
                count,
                sliceOf(r.spec),
                KvMessage(DataMsg{id, layer, r.attempt})};
  auto moved = context_.port.move(spec, [this, id, moveId](MoveResult result) {
    context_.postToLoop(
        [this, id, moveId, result = std::move(result)] { onMoveDone(id, *moveId, result); });
  });
  if (!moved.isOk()) {
    fail(r, moved.status().withContext("writing '" + id + "' to '" + peer + "'"), true);
    return;
  }
  *moveId = *moved;
  r.moves.add(*moved);
}

void PrefillSide::onMoveDone(const std::string& id, MoveId move, const MoveResult& result) {
  Request* r = find(id);
  if (r == nullptr) return;
  r->moves.finished(move, result);
  if (r->mode == KvMode::kPush) {
    r->view.descriptors = r->moves.descriptors();
    r->view.operations = r->moves.operations();
  }
  if (!result.status.isOk() && !r->failing) {
    fail(*r, result.status.withContext("writing '" + id + "' to '" + r->view.peer + "'"), true);
    return;
  }
  maybeFinish(id);
}

std::vector<KvPeerStatus> PrefillSide::peerViews() const {
  std::vector<KvPeerStatus> out;
  for (const auto& view : scheduler_.peers()) {
    KvPeerStatus s;
    s.name = view.name;
    s.role = KvRole::kDecode;
    s.compatible = true;
    s.totalBlocks = view.totalBlocks;
    s.kvHeads = view.kvHeads;
    s.freeBlocks = view.freeBlocks;
    s.inFlightBytes = view.inFlightBytes;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kvx::kv::handoff
