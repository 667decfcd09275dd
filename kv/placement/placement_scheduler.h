#pragma once

// PlacementScheduler: the prefill side's choice of the decode agent that receives a request's
// KV blocks. It keeps an estimate of each decode peer (pool size, free blocks, bytes in
// flight from this prefill agent, prefix hash ids it placed there) and answers, for one
// request, place on peer P, wait, or refuse. The decode agent allocates the real blocks and
// may still refuse (another prefill agent may have taken the room first); a fresh report
// through upsertPeer() corrects the estimate.
//
// Policy of decide():
//   REFUSE (the request can never be placed as asked):
//     - INVALID_ARGUMENT when it needs 0 blocks, or carries prefix hashes with
//       blocksPerChunk 0;
//     - NOT_FOUND when pinnedPeer names no known peer;
//     - INVALID_ARGUMENT when no peer (or the pinned peer) has totalBlocks >= blocks; the
//       message names the need and the largest pool.
//   WAIT (RESOURCE_EXHAUSTED; the message gives the closest candidate's numbers):
//     - when there are no peers at all;
//     - when no candidate is both admissible and has room. A peer is admissible when
//       inFlightBytes + bytes <= maxInFlightBytesPerPeer, or when it has nothing in flight
//       (so a single request larger than the limit still proceeds on an idle peer). It has
//       room when freeBlocks >= blocks - expectedPrefixChunks * blocksPerChunk (clamped at
//       0), where expectedPrefixChunks is the number of leading prefix hash ids that this
//       scheduler previously placed on that peer and still remembers.
//   PLACE on the admissible peer with room that maximises, in order:
//     1. expected prefix chunks reused;
//     2. the lowest in-flight bytes as a fraction of the limit (the limit is the same for
//        every peer, so: the fewest in-flight bytes);
//     3. the most free blocks;
//     4. the fewest bytes placed on it so far, so that idle peers that tie on everything
//        else share the requests (by name alone, the first would take them all);
//     5. the smallest name, so equal inputs give equal answers.
//   A pinned request considers only its pinned peer, under the same room and admission rules.
//   A query with kvHeads set considers only peers holding as many heads per block (a pinned
//   peer holding another number is INVALID_ARGUMENT): whole blocks cannot move between them.
//
// Not thread-safe: owned by the agent's control strand. Pure and deterministic: no clock,
// no I/O; the caller feeds it reports and outcomes.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kv/placement/prefix_memory.h"
#include "kvx/status.h"

namespace kvx::kv::placement {

struct SchedulerOptions {
  std::uint64_t maxInFlightBytesPerPeer = 1ull << 30;
  std::size_t prefixMemoryPerPeer = 65536;  // hash ids remembered per peer, LRU
};

// What the scheduler believes about one decode peer.
struct DecodePeerView {
  std::string name;
  std::uint64_t totalBlocks = 0;
  std::uint32_t kvHeads = 0;  // per block; 0: not reported
  // As last reported by the peer, minus the blocks placed there since that report.
  std::uint64_t freeBlocks = 0;
  std::uint64_t inFlightBytes = 0;
  std::uint64_t inFlightRequests = 0;
  std::uint64_t placedBytes = 0;  // of every request placed on it so far
};

struct PlacementQuery {
  std::string requestId;
  std::uint64_t blocks = 0;                 // blocks the request needs in total
  std::uint64_t bytes = 0;                  // bytes it will transfer
  std::vector<std::uint64_t> prefixHashes;  // one per prefix chunk, leading chunk first
  std::uint64_t blocksPerChunk = 0;         // blocks one hash chunk covers, e.g. 512/16 = 32
  std::optional<std::string> pinnedPeer;
  // Whole blocks of this many KV heads need a peer with as many (0: any peer).
  std::uint32_t kvHeads = 0;
  // A part of a gather: it may join a request whose blocks the peer reserved for another
  // part, so room is not a reason to wait (the peer refuses, retryably, if it has none).
  // Waiting here could deadlock: parts from other sources hold the room this one's request
  // already has.
  bool mayJoin = false;
};

enum class Verdict : std::uint8_t { kPlace, kWait, kRefuse };

// "place", "wait", "refuse".
std::string_view toString(Verdict verdict);

struct PlacementDecision {
  Verdict verdict = Verdict::kRefuse;
  std::string peer;                        // the chosen peer; empty unless kPlace
  std::uint64_t expectedPrefixChunks = 0;  // chunks expected to be reused there (kPlace)
  // A short explanation for logs: "most free blocks (812 of 1024)", "prefix locality: 12 of
  // 14 chunks", "pinned". Empty for kWait and kRefuse, whose status explains them.
  std::string reason;
  // OK for kPlace; RESOURCE_EXHAUSTED for kWait; INVALID_ARGUMENT or NOT_FOUND for kRefuse.
  Status status;
};

class PlacementScheduler {
 public:
  explicit PlacementScheduler(SchedulerOptions options);

  // Adds a peer or takes a fresh report from it: totalBlocks and freeBlocks are replaced
  // (freeBlocks clamped to totalBlocks); in-flight counts and prefix memory are kept.
  // kvHeads 0 keeps what was known.
  void upsertPeer(const std::string& name, std::uint64_t totalBlocks,
                  std::uint64_t reportedFreeBlocks, std::uint32_t kvHeads = 0);

  // Forgets the peer, its in-flight counts and its prefix memory. No-op if unknown.
  void removePeer(const std::string& name);

  // The verdict for `query` under the policy above. Changes nothing: the caller reports
  // what it did with recordPlaced().
  PlacementDecision decide(const PlacementQuery& query) const;

  // The request went to `peer`: freeBlocks -= blocksReserved (clamped at 0), in-flight
  // bytes and placed bytes += bytes, requests += 1, and `prefixHashes` are remembered for
  // the peer.
  // blocksReserved is what the peer allocated (blocks minus reused prefix blocks).
  // No-op if the peer is unknown (it may have been removed since decide()).
  void recordPlaced(const std::string& peer, std::uint64_t blocksReserved, std::uint64_t bytes,
                    std::span<const std::uint64_t> prefixHashes);

  // A transfer to `peer` ended (done or failed): in-flight bytes -= bytes, requests -= 1,
  // both clamped at 0. Blocks are not given back: the decode peer still holds them until
  // its next report says otherwise. No-op if the peer is unknown.
  void recordFinished(const std::string& peer, std::uint64_t bytes);
  // The peer refused a placement for lack of room: the prefix ids we expected there are
  // evidently not all cached any more, so they stop counting as locality for it.
  void forgetPrefixes(const std::string& peer, std::span<const std::uint64_t> prefixHashes);

  // Every peer, in name order.
  std::vector<DecodePeerView> peers() const;
  std::optional<DecodePeerView> peer(const std::string& name) const;

  const SchedulerOptions& options() const { return options_; }

 private:
  struct PeerState {
    explicit PeerState(DecodePeerView v, std::size_t prefixCapacity)
        : view(std::move(v)), prefixes(prefixCapacity) {}

    DecodePeerView view;
    PrefixMemory prefixes;
  };

  PlacementDecision refuseTooLarge(const PlacementQuery& query) const;
  static bool headsMatch(const DecodePeerView& peer, const PlacementQuery& query);

  SchedulerOptions options_;
  std::map<std::string, PeerState> peers_;  // ordered: name order is the last tie-break
};

}  // namespace kvx::kv::placement
