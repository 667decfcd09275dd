#include "kv/placement/placement_scheduler.h"

#include <algorithm>
#include <utility>

namespace kvx::kv::placement {

namespace {

// One peer judged against one query.
struct Candidate {
  const DecodePeerView* peer = nullptr;
  std::uint64_t prefixChunks = 0;
  std::uint64_t needBlocks = 0;  // blocks that need room after prefix reuse
  bool fits = false;             // the pool could ever hold the request
  bool hasRoom = false;
  bool admissible = false;

  bool viable() const { return fits && hasRoom && admissible; }
};

Candidate evaluate(const DecodePeerView& peer, const PrefixMemory& prefixes,
                   const PlacementQuery& query, std::uint64_t limit) {
  Candidate c;
  c.peer = &peer;
  c.prefixChunks = prefixes.leadingMatches(query.prefixHashes);
  // Saturating prefixChunks * blocksPerChunk, then clamped to the request.
  std::uint64_t reused = query.blocks;
  if (query.blocksPerChunk == 0 || c.prefixChunks <= query.blocks / query.blocksPerChunk) {
    reused = std::min(query.blocks, c.prefixChunks * query.blocksPerChunk);
  }
  c.needBlocks = query.blocks - reused;
  c.fits = peer.totalBlocks >= query.blocks;
  c.hasRoom = query.mayJoin || peer.freeBlocks >= c.needBlocks;
  c.admissible = peer.inFlightBytes == 0 ||
                 (query.bytes <= limit && peer.inFlightBytes <= limit - query.bytes);
  return c;
}

std::string num(std::uint64_t value) { return std::to_string(value); }

// True when `a` ranks before `b` under the placement order.
bool ranksBefore(const Candidate& a, const Candidate& b) {
  if (a.prefixChunks != b.prefixChunks) return a.prefixChunks > b.prefixChunks;
  if (a.peer->inFlightBytes != b.peer->inFlightBytes) {
    return a.peer->inFlightBytes < b.peer->inFlightBytes;
  }
  if (a.peer->freeBlocks != b.peer->freeBlocks) {
    return a.peer->freeBlocks > b.peer->freeBlocks;
  }
  if (a.peer->placedBytes != b.peer->placedBytes) {
    return a.peer->placedBytes < b.peer->placedBytes;
  }
  return a.peer->name < b.peer->name;
}

// For a wait message: the candidate nearest to being placeable. Admissible peers first
// (their shortfall is only blocks), then the smallest block shortfall, then the least in
// flight, then name.
bool closerThan(const Candidate& a, const Candidate& b) {
  if (a.admissible != b.admissible) return a.admissible;
  auto shortfall = [](const Candidate& c) {
    return c.needBlocks > c.peer->freeBlocks ? c.needBlocks - c.peer->freeBlocks : 0;
  };
  if (shortfall(a) != shortfall(b)) return shortfall(a) < shortfall(b);
  if (a.peer->inFlightBytes != b.peer->inFlightBytes) {
    return a.peer->inFlightBytes < b.peer->inFlightBytes;
  }
  return a.peer->name < b.peer->name;
}

std::string freeText(const Candidate& c) {
  return num(c.peer->freeBlocks) + " of " + num(c.peer->totalBlocks);
}

std::string prefixText(const Candidate& c, const PlacementQuery& query) {
  return "prefix locality: " + num(c.prefixChunks) + " of " + num(query.prefixHashes.size()) +
         " chunks";
}

std::string inFlightText(const Candidate& c, std::uint64_t limit) {
  std::string text = "fewest bytes in flight (" + num(c.peer->inFlightBytes);
  if (limit != 0) {
    const auto percent = static_cast<std::uint64_t>(
        100.0 * static_cast<double>(c.peer->inFlightBytes) / static_cast<double>(limit));
    text += ", " + num(percent) + "% of limit";
  }
  return text + ")";
}

// Why `winner` beat `runnerUp` (the next viable candidate, if any), for logs.
std::string placeReason(const Candidate& winner, const Candidate* runnerUp,
                        const PlacementQuery& query, std::uint64_t limit) {
  std::string reason;
  bool prefixDecided = false;
  if (runnerUp == nullptr) {
    reason = "only peer with room (" + freeText(winner) + " blocks free)";
  } else if (winner.prefixChunks != runnerUp->prefixChunks) {
    reason = prefixText(winner, query);
    prefixDecided = true;
  } else if (winner.peer->inFlightBytes != runnerUp->peer->inFlightBytes) {
    reason = inFlightText(winner, limit);
  } else if (winner.peer->freeBlocks != runnerUp->peer->freeBlocks) {
    reason = "most free blocks (" + freeText(winner) + ")";
  } else if (winner.peer->placedBytes != runnerUp->peer->placedBytes) {
    reason = "fewest bytes placed so far (" + num(winner.peer->placedBytes) + " against " +
             num(runnerUp->peer->placedBytes) + ")";
  } else {
    reason = "tie broken by name (" + freeText(winner) + " blocks free)";
  }
  if (!prefixDecided && winner.prefixChunks != 0) reason += "; " + prefixText(winner, query);
  return reason;
}

PlacementDecision refuse(Status status) {
  PlacementDecision decision;
  decision.verdict = Verdict::kRefuse;
  decision.status = std::move(status);
  return decision;
}

PlacementDecision wait(std::string message) {
  PlacementDecision decision;
  decision.verdict = Verdict::kWait;
  decision.status = resourceExhausted(std::move(message));
  return decision;
}

PlacementDecision place(const Candidate& c, std::string reason) {
  PlacementDecision decision;
  decision.verdict = Verdict::kPlace;
  decision.peer = c.peer->name;
  decision.expectedPrefixChunks = c.prefixChunks;
  decision.reason = std::move(reason);
  return decision;
}

// What keeps `c` from taking the request, with the numbers.
std::string blockers(const Candidate& c, const PlacementQuery& query, std::uint64_t limit) {
  std::string text = "decode peer " + c.peer->name + ": " + freeText(c) + " blocks free";
  if (!c.hasRoom) {
    text += ", the request needs " + num(c.needBlocks) + " (" + num(query.blocks) +
            " less prefix reuse, " + num(c.prefixChunks) + " of " + num(query.prefixHashes.size()) +
            " chunks)";
  }
  if (!c.admissible) {
    text += "; " + num(c.peer->inFlightBytes) + " bytes in flight there plus " + num(query.bytes) +
            " would exceed the per-peer limit of " + num(limit);
  }
  return text + "; retry when a peer reports free blocks or a transfer finishes";
}

}  // namespace

std::string_view toString(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPlace: return "place";
    case Verdict::kWait: return "wait";
    case Verdict::kRefuse: return "refuse";
  }
  return "unknown";
}

PlacementScheduler::PlacementScheduler(SchedulerOptions options) : options_(options) {}

void PlacementScheduler::upsertPeer(const std::string& name, std::uint64_t totalBlocks,
                                    std::uint64_t reportedFreeBlocks, std::uint32_t kvHeads) {
  auto it = peers_.find(name);
  if (it == peers_.end()) {
    it = peers_.emplace(name, PeerState(DecodePeerView{name}, options_.prefixMemoryPerPeer)).first;
  }
  DecodePeerView& view = it->second.view;
  view.totalBlocks = totalBlocks;
  view.freeBlocks = std::min(reportedFreeBlocks, totalBlocks);
  if (kvHeads != 0) view.kvHeads = kvHeads;
}

void PlacementScheduler::removePeer(const std::string& name) { peers_.erase(name); }

bool PlacementScheduler::headsMatch(const DecodePeerView& peer, const PlacementQuery& query) {
  return query.kvHeads == 0 || peer.kvHeads == 0 || peer.kvHeads == query.kvHeads;
}

PlacementDecision PlacementScheduler::refuseTooLarge(const PlacementQuery& query) const {
  std::uint64_t largest = 0;
  for (const auto& [name, state] : peers_) largest = std::max(largest, state.view.totalBlocks);
  return refuse(invalidArgument("request " + query.requestId + " needs " + num(query.blocks) +
                                " blocks; the largest decode pool has " + num(largest)));
}

PlacementDecision PlacementScheduler::decide(const PlacementQuery& query) const {
  const std::uint64_t limit = options_.maxInFlightBytesPerPeer;
  if (query.blocks == 0) {
    return refuse(invalidArgument("request " + query.requestId +
                                  " needs 0 blocks; a placement needs at least one"));
  }
  if (!query.prefixHashes.empty() && query.blocksPerChunk == 0) {
    return refuse(invalidArgument("request " + query.requestId + " has " +
                                  num(query.prefixHashes.size()) +
                                  " prefix hashes but blocksPerChunk 0; pass the blocks one "
                                  "hash chunk covers"));
  }

  if (query.pinnedPeer) {
    auto it = peers_.find(*query.pinnedPeer);
    if (it == peers_.end()) {
      return refuse(notFound("request " + query.requestId + " is pinned to decode peer '" +
                             *query.pinnedPeer + "', which is not known (" + num(peers_.size()) +
                             " peers known)"));
    }
    if (!headsMatch(it->second.view, query)) {
      return refuse(invalidArgument("request " + query.requestId + " moves whole blocks of " +
                                    num(query.kvHeads) + " KV heads; pinned decode peer " +
                                    it->first + " holds " + num(it->second.view.kvHeads) +
                                    " per block (slice the request instead)"));
    }
    const Candidate c = evaluate(it->second.view, it->second.prefixes, query, limit);
    if (!c.fits) {
      return refuse(invalidArgument("request " + query.requestId + " needs " + num(query.blocks) +
                                    " blocks; pinned decode peer " + it->first + " has " +
                                    num(it->second.view.totalBlocks)));
    }
    if (!c.viable()) {
      return wait("request " + query.requestId + " waits for its pinned " +
                  blockers(c, query, limit));
    }
    std::string reason = "pinned";
    if (c.prefixChunks != 0) reason += "; " + prefixText(c, query);
    return place(c, std::move(reason));
  }

  if (peers_.empty()) {
    return wait("request " + query.requestId +
                " waits: no decode peers are known yet; retry when one reports");
  }

  std::vector<Candidate> fitting;
  fitting.reserve(peers_.size());
  for (const auto& [name, state] : peers_) {
    if (!headsMatch(state.view, query)) continue;
    Candidate c = evaluate(state.view, state.prefixes, query, limit);
    if (c.fits) fitting.push_back(c);
  }
  if (fitting.empty()) return refuseTooLarge(query);

  const Candidate* best = nullptr;
  const Candidate* runnerUp = nullptr;
  for (const Candidate& c : fitting) {
    if (!c.viable()) continue;
    if (best == nullptr || ranksBefore(c, *best)) {
      runnerUp = best;
      best = &c;
    } else if (runnerUp == nullptr || ranksBefore(c, *runnerUp)) {
      runnerUp = &c;
    }
  }
  if (best != nullptr) return place(*best, placeReason(*best, runnerUp, query, limit));

  const Candidate& closest = *std::min_element(fitting.begin(), fitting.end(), closerThan);
  return wait("request " + query.requestId + " waits: no decode peer has room within the " +
              "in-flight limit; closest is " + blockers(closest, query, limit));
}

void PlacementScheduler::recordPlaced(const std::string& peer, std::uint64_t blocksReserved,
                                      std::uint64_t bytes,
                                      std::span<const std::uint64_t> prefixHashes) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  DecodePeerView& view = it->second.view;
  view.freeBlocks -= std::min(view.freeBlocks, blocksReserved);
  view.inFlightBytes += bytes;
  view.inFlightRequests += 1;
  view.placedBytes += bytes;
  it->second.prefixes.remember(prefixHashes);
}

void PlacementScheduler::recordFinished(const std::string& peer, std::uint64_t bytes) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  DecodePeerView& view = it->second.view;
  view.inFlightBytes -= std::min(view.inFlightBytes, bytes);
  if (view.inFlightRequests != 0) view.inFlightRequests -= 1;
}

void PlacementScheduler::forgetPrefixes(const std::string& peer,
                                        std::span<const std::uint64_t> prefixHashes) {
  auto it = peers_.find(peer);
  if (it != peers_.end()) it->second.prefixes.forget(prefixHashes);
}

std::vector<DecodePeerView> PlacementScheduler::peers() const {
  std::vector<DecodePeerView> out;
  out.reserve(peers_.size());
  for (const auto& [name, state] : peers_) out.push_back(state.view);
  return out;
}

std::optional<DecodePeerView> PlacementScheduler::peer(const std::string& name) const {
  auto it = peers_.find(name);
  if (it == peers_.end()) return std::nullopt;
  return it->second.view;
}

}  // namespace kvx::kv::placement
