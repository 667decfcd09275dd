// DecodeSide: how a part's placement is checked and gets its blocks (a new request's, or
// those of the request it joins), and how a request's blocks return to the pool.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "kv/handoff/decode_side.h"

namespace kvx::kv::handoff {

void DecodeSide::onPlace(const std::string& peer, const PlaceMsg& m) {
  const PartKey key{peer, m.req};
  if (auto w = writers_.find(peer);
      w != writers_.end() && held_.superseded(peer, m.req, w->second.incarnation)) {
    // The prefill agent places this id again: its earlier request of that id has ended there
    // with its moves drained (ids are unique among its live requests; one it re-places was
    // never told where to write).
    releaseHeld(Clock::now());
  }
  if (!accepting_) {
    return refuse(peer, m, cancelled("the decode agent is shutting down"), false);
  }
  if (parts_.contains(key)) {
    return refuse(
        peer, m,
        alreadyExists("request id '" + m.req + "' of '" + peer + "' is live on this decode agent"),
        false);
  }
  if (Status valid = checkPlace(m); !valid.isOk()) return refuse(peer, m, valid, false);
  if (Status capped = checkPushCap(peer, m); !capped.isOk()) {
    return refuse(peer, m, capped, capped.code() == StatusCode::kResourceExhausted);
  }
  Group* g = findGroup(m.groupId());
  if (g != nullptr) {
    if (Status joined = joinGroup(*g, m); !joined.isOk()) {
      return refuse(peer, m, joined, false);
    }
  } else {
    auto created = createGroup(peer, m);
    if (!created.isOk()) {
      const bool retryable = created.status().code() == StatusCode::kResourceExhausted;
      return refuse(peer, m, created.status(), retryable);
    }
    g = *created;
  }
  Part part;
  part.group = g->view.id;
  part.place = m;
  if (m.mode == KvMode::kPull) part.source = kv::expandExtents(m.sourceBlocks);
  part.layersDone.assign(layers(), false);
  parts_.emplace(key, std::move(part));
  g->members.push_back(key);
  const std::uint32_t first = m.headCount == 0 ? 0 : m.dstHeadFirst;
  g->heads.emplace_back(first, m.headCount == 0 ? heads() : first + m.headCount);
  std::fill(g->layersDone.begin(), g->layersDone.end(), false);
  publish(*g);
  PlacedMsg reply{m.req, kv::compressBlocks(g->blocks), g->view.prefixBlocks, availableBlocks(),
                  m.attempt};
  Status sent = context_.port.send(peer, reply);
  if (!sent.isOk()) failGroup(*g, sent, &key, false);
}

Status DecodeSide::checkPushCap(const std::string& peer, const PlaceMsg& m) const {
  const std::uint64_t cap = context_.options.maxPushBlocksPerPeer;
  if (cap == 0 || m.mode != KvMode::kPush) return Status::ok();
  if (m.blocks > cap) {
    return invalidArgument("request needs " + std::to_string(m.blocks) +
                           " blocks, more than one prefill agent may write here at once "
                           "(maxPushBlocksPerPeer " +
                           std::to_string(cap) + ")");
  }
  std::uint64_t exposed = held_.blocksOf(peer);
  for (const auto& [key, part] : parts_) {
    if (key.first == peer && part.place.mode == KvMode::kPush && !part.confirmed) {
      exposed += part.place.blocks;
    }
  }
  if (exposed + m.blocks > cap) {
    return resourceExhausted("'" + peer + "' has " + std::to_string(exposed) +
                             " blocks being written or held here; " + std::to_string(m.blocks) +
                             " more would pass maxPushBlocksPerPeer " + std::to_string(cap));
  }
  return Status::ok();
}

Status DecodeSide::checkPlace(const PlaceMsg& m) const {
  const std::uint64_t blocks = context_.pool.shape.blocksForTokens(m.tokens);
  if (m.blocks != blocks) {
    return invalidArgument(std::to_string(m.tokens) + " tokens need " + std::to_string(blocks) +
                           " blocks; the placement says " + std::to_string(m.blocks));
  }
  if (blocks > context_.pool.blocks) {
    return invalidArgument("request needs " + std::to_string(blocks) + " blocks; this pool has " +
                           std::to_string(context_.pool.blocks));
  }
  if (m.mode == KvMode::kPull && kv::totalBlocks(m.sourceBlocks) != blocks) {
    return invalidArgument("PULL placement lists " +
                           std::to_string(kv::totalBlocks(m.sourceBlocks)) + " source blocks for " +
                           std::to_string(blocks));
  }
  if (m.headCount != 0 && (m.dstHeadFirst >= heads() || m.headCount > heads() - m.dstHeadFirst)) {
    return invalidArgument("destination heads [" + std::to_string(m.dstHeadFirst) + ", +" +
                           std::to_string(m.headCount) + ") are not within this pool's " +
                           std::to_string(heads()) + " KV heads per block");
  }
  return Status::ok();
}

Status DecodeSide::joinGroup(Group& g, const PlaceMsg& m) const {
  const std::string& id = g.view.id;
  if (g.failing) {
    return failedPrecondition("request '" + id +
                              "' has failed already: " + g.view.status.message());
  }
  if (g.members.size() >= g.parts) {
    return alreadyExists("request '" + id + "' already has its " + std::to_string(g.parts) +
                         " part(s)");
  }
  if (m.parts != g.parts || m.tokens != g.tokens) {
    return invalidArgument("a part of request '" + id + "' says " + std::to_string(m.parts) +
                           " parts of " + std::to_string(m.tokens) + " tokens; the first said " +
                           std::to_string(g.parts) + " of " + std::to_string(g.tokens));
  }
  const std::uint32_t first = m.headCount == 0 ? 0 : m.dstHeadFirst;
  const std::uint32_t end = m.headCount == 0 ? heads() : first + m.headCount;
  for (const auto& [taken, takenEnd] : g.heads) {
    if (first < takenEnd && taken < end) {
      return invalidArgument("a part of request '" + id + "' fills heads [" +
                             std::to_string(first) + ", " + std::to_string(end) +
                             "), which overlap heads [" + std::to_string(taken) + ", " +
                             std::to_string(takenEnd) + ") of another part");
    }
  }
  return Status::ok();
}

Result<DecodeSide::Group*> DecodeSide::createGroup(const std::string& peer, const PlaceMsg& m) {
  const std::uint64_t blocks = m.blocks;
  Group g;
  // Reusable prefix: leading chunks that are full (all their tokens in the prompt) and
  // cached with exactly one chunk's blocks.
  const std::uint64_t perChunk = context_.blocksPerChunk();
  std::size_t chunks = perChunk == 0 ? 0 : cache_.matchPrefix(m.prefixHashes);
  chunks = std::min<std::size_t>(chunks, m.tokens / context_.options.prefixChunkTokens);
  std::vector<kv::BlockExtent> prefixExtents;
  if (chunks > 0) {
    g.pinnedHashes.assign(m.prefixHashes.begin(), m.prefixHashes.begin() + chunks);
    auto acquired = cache_.acquire(g.pinnedHashes);
    if (acquired.isOk()) {
      prefixExtents = std::move(acquired).value();
    } else {
      g.pinnedHashes.clear();
    }
  }
  const std::uint64_t prefixBlocks = kv::totalBlocks(prefixExtents);
  const std::uint64_t need = blocks - prefixBlocks;
  if (need > context_.allocator.freeBlocks()) {
    const auto evicted = cache_.evict(need - context_.allocator.freeBlocks());
    if (!evicted.empty()) (void)freeBlocks(evicted);
  }
  if (need > 0) {
    auto allocated = takeBlocks(need, m.groupId());
    if (!allocated.isOk()) {
      if (!g.pinnedHashes.empty()) (void)cache_.release(g.pinnedHashes);
      return allocated.status();
    }
    g.ownExtents = std::move(allocated).value();
  }
  g.blocks = kv::expandExtents(prefixExtents);
  const auto own = kv::expandExtents(g.ownExtents);
  g.blocks.insert(g.blocks.end(), own.begin(), own.end());
  g.parts = m.parts;
  g.tokens = m.tokens;
  g.prefixHashes = m.prefixHashes;
  g.layersDone.assign(layers(), false);
  g.placedAt = Clock::now();
  g.view.id = m.groupId();
  g.view.peer = peer;
  g.view.mode = m.mode;
  g.view.state = KvRequestState::kPlaced;
  g.view.blocks = blocks;
  g.view.prefixBlocks = prefixBlocks;
  g.view.bytes = need * context_.blockBytes();
  // The prefill agent asks for a lease; the owner of the memory caps it at its own.
  const auto lease = std::min(std::chrono::milliseconds(m.leaseMs), context_.options.leaseTimeout);
  (void)leases_.grant(g.view.id, g.placedAt + lease);
  auto [it, inserted] = groups_.emplace(g.view.id, std::move(g));
  return &it->second;
}

void DecodeSide::returnBlocks(Group& g, bool keepPrefixes, Clock::duration hold,
                              std::vector<LostWriter> writers) {
  if (!g.pinnedHashes.empty()) (void)cache_.release(g.pinnedHashes);
  std::vector<std::uint64_t> own = kv::expandExtents(g.ownExtents);
  std::vector<kv::BlockExtent> toFree;
  // Full chunks this request brought in may stay for the next request with that prefix.
  const std::uint64_t perChunk = context_.blocksPerChunk();
  const std::size_t firstChunk = g.pinnedHashes.size();
  const std::size_t fullChunks =
      std::min<std::size_t>(g.prefixHashes.size(), g.tokens / context_.options.prefixChunkTokens);
  std::size_t used = 0;
  if (keepPrefixes && perChunk > 0 && cache_.capacityBlocks() > 0) {
    for (std::size_t c = firstChunk; c < fullChunks && used + perChunk <= own.size(); ++c) {
      std::span<const std::uint64_t> chunk(own.data() + used, perChunk);
      std::vector<kv::BlockExtent> evicted;
      auto inserted = cache_.insert(g.prefixHashes[c], kv::compressBlocks(chunk), evicted);
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
  if (!toFree.empty() && !writers.empty()) {
    for (const LostWriter& w : writers) {
      spdlog::warn(
          "{}: holding the {} blocks of '{}' until prefill agent '{}' ({}) answers an abort "
          "or its process ends: it copies into this pool itself, so closing its link does not "
          "stop a write it is in the middle of",
          context_.name, kv::totalBlocks(toFree), g.view.id, w.peer, w.writer.process);
    }
    held_.hold(g.view.id, std::move(toFree), Clock::now() + hold, std::move(writers));
    askHeldWriters();
  } else if (!toFree.empty() && hold > Clock::duration::zero()) {
    spdlog::debug(
        "{}: holding the {} blocks of '{}' for {} ms: its prefill agent was lost mid-push and "
        "its last bytes may still land",
        context_.name, kv::totalBlocks(toFree), g.view.id,
        std::chrono::duration_cast<std::chrono::milliseconds>(hold).count());
    held_.hold(g.view.id, std::move(toFree), Clock::now() + hold, {});
  } else if (!toFree.empty()) {
    Status freed = freeBlocks(toFree);
    if (!freed.isOk()) {
      spdlog::error("{}: freeing the blocks of '{}': {}", context_.name, g.view.id,
                    freed.toString());
    }
  }
  g.ownExtents.clear();
  g.pinnedHashes.clear();
}

Status DecodeSide::freeBlocks(std::span<const kv::BlockExtent> extents) {
  if (context_.canary != nullptr) context_.canary->fill(extents);
  return context_.allocator.free(extents);
}

Result<std::vector<kv::BlockExtent>> DecodeSide::takeBlocks(std::uint64_t count,
                                                            const std::string& id) {
  auto taken = context_.allocator.allocate(count);
  if (taken.isOk()) reportLateWrites(*taken, "when placing '" + id + "'");
  return taken;
}

void DecodeSide::checkFreeBlocks() {
  if (context_.canary == nullptr) return;
  std::vector<std::uint64_t> free;
  for (std::uint64_t block = 0; block < context_.allocator.totalBlocks(); ++block) {
    if (context_.allocator.isFree(block)) free.push_back(block);
  }
  reportLateWrites(kv::compressBlocks(free), "in a sweep of the free blocks");
}

void DecodeSide::reportLateWrites(std::span<const kv::BlockExtent> extents,
                                  const std::string& when) {
  if (context_.canary == nullptr) return;
  for (const std::uint64_t block : context_.canary->check(extents)) {
    spdlog::error(
        "{}: LATE WRITE: pool block {} changed while it was free (found {}): a transfer wrote "
        "into it after its request ended",
        context_.name, block, when);
  }
}

}  // namespace kvx::kv::handoff
