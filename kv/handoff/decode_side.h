#pragma once

// DecodeSide: the life of each request on the decode agent.
//   placed (blocks reserved under a lease) -> transferring -> complete (every layer in
//   place; nextArrival() hands it out) -> consumed (the server took it; the lease stops) ->
//   released (blocks back to the pool or the prefix cache); failed from any state (lease
//   expired, aborted by either side, peer failed), freeing what it held.
// A request (a "group") is filled by one or more parts: one per prefill agent that sends
// it, each with its own hand-off (place, data or ready, confirm, abort). An ordinary request
// has one part moving whole segments; a tensor-parallel gather has several, each moving a
// disjoint head range into the same blocks. The first part's placement reserves the blocks;
// later parts join them. A part is confirmed to its prefill agent as soon as its own data
// is in place; the request completes when every part has.
// Blocks: leading full prefix chunks already cached are reused (pinned), the rest come from
// the allocator (contiguous when possible, evicting unpinned prefix chunks when short).
// PULL: this side READs each layer the prefill side says is ready. PUSH: the prefill side
// writes and a "data" message follows each layer's data.
// Failure: a failing part fails its request, and with it every other part not yet
// confirmed. After draining its own reads a part ends at once in PULL; in PUSH it waits for
// the prefill side's abortAck (or its death), since that side still writes. The request's
// blocks are freed when its last failing part has ended, except those of a PUSH part whose
// prefill agent was lost: they are held (held_blocks.h) until none of its bytes can land.
// A part placed for a request that has ended since is treated as a new request, which
// waits for parts that never come and ends when its lease expires.
//
// Threads: every member runs on the KV service thread.

#include <map>
#include <string>
#include <unordered_set>
#include <utility>

#include "kv/handoff/held_blocks.h"
#include "kv/handoff/in_flight_moves.h"
#include "kv/handoff/peer_writer.h"
#include "kv/handoff/side_context.h"
#include "kv/placement/lease_table.h"
#include "kv/pool/prefix_cache.h"

namespace kvx::kv::handoff {

class DecodeSide {
 public:
  explicit DecodeSide(SideContext& context);

  // A prefill agent joined: it is told how many blocks are free, and asked to abort each
  // held request it may still write into (a rejoin of the incarnation that was lost).
  void onPeerReady(const std::string& peer, PeerWriter writer = {});
  void onPeerGone(const std::string& peer, const Status& why);
  void onMessage(const std::string& peer, const KvMessage& message);
  void onTick();

  // By the request id the server sees (the group id).
  Status consume(const std::string& id);
  Status release(const std::string& id);
  Status dropPrefixCache();
  void failAll(const Status& why);
  // Releases every request handed out (complete or consumed): for when the server that would
  // release them is gone.
  void releaseHandedOut();
  // Stop placing new requests (shutdown).
  void stopAccepting() { accepting_ = false; }

  std::size_t liveRequests() const { return groups_.size(); }
  // Free blocks plus unpinned prefix-cache blocks (evicted on demand): what we report.
  std::uint64_t availableBlocks() const;
  // With a canary: checks every free block now, logging each late write found.
  void checkFreeBlocks();
  // Frees the blocks held for lost PUSH peers whose hold ended by `now` and whose writers
  // are proven stopped (all of them for Clock::time_point::max(), at shutdown).
  void releaseHeld(Clock::time_point now);
  // Blocks out of the pool until a lost prefill agent's writes can no longer land.
  std::uint64_t heldBlocks() const { return held_.blocks(); }
  // The operator's word that `peer` (empty: every lost writer not joined now) will write no
  // more (KvAgent::giveBackHeldBlocks): the blocks held for it go back once their timers end.
  // Returns how many waited for it; NOT_FOUND for a peer joined now (its writes are not
  // lost: abort its requests instead).
  Result<std::uint64_t> giveBackHeld(const std::string& peer);
  const kv::PrefixCache& prefixCache() const { return cache_; }

 private:
  // (prefill agent, its request id): how the hand-off protocol names a part.
  using PartKey = std::pair<std::string, std::string>;

  // One prefill agent's share of a request, and the hand-off with that agent.
  struct Part {
    std::string group;
    PlaceMsg place;
    std::vector<std::uint64_t> source;  // PULL: the prefill side's blocks
    std::vector<bool> layersDone;
    std::uint32_t doneCount = 0;
    bool confirmed = false;  // its data is in place and the prefill side was told
    InFlightMoves moves;
    bool failing = false;
    bool abortPending = false;  // tell the peer once our reads drained
    bool ackOwed = false;       // the peer aborted: acknowledge once our reads drained
    bool awaitingAck = false;
    Deadline ackDeadline{};
  };

  // A request as the server sees it: its blocks, lease and state.
  struct Group;
  // Handed to the server (complete or consumed): only the server's release ends it.
  static bool handedOut(const Group& g);

  struct Group {
    KvRequestStatus view;
    std::uint32_t parts = 1;                                     // expected
    std::vector<PartKey> members;                                // placed so far, in arrival order
    std::vector<std::pair<std::uint32_t, std::uint32_t>> heads;  // [first, end) per member
    std::uint32_t confirmedParts = 0;
    std::uint64_t tokens = 0;
    std::vector<std::uint64_t> prefixHashes;
    std::vector<std::uint64_t> pinnedHashes;  // prefix chunks reused (pinned in the cache)
    std::vector<kv::BlockExtent> ownExtents;  // allocated for this request
    std::vector<std::uint64_t> blocks;        // all destination blocks, in token order
    std::vector<bool> layersDone;             // every part has this layer in place
    bool failing = false;
    bool lostPush = false;  // a PUSH part's prefill agent was lost before it was confirmed
    std::vector<LostWriter> lostWriters;  // those of them that write directly (peer_writer.h)
    Clock::time_point placedAt;
  };

  // Asks each joined prefill agent to abort the held requests it may still write into, once
  // per session (its join may come before its request's blocks are held: a gather's other
  // parts can keep the request open meanwhile).
  void askHeldWriters();
  void onPlace(const std::string& peer, const PlaceMsg& m);
  Status checkPlace(const PlaceMsg& m) const;
  // RESOURCE_EXHAUSTED (retryable) when `m` would put `peer` over maxPushBlocksPerPeer.
  Status checkPushCap(const std::string& peer, const PlaceMsg& m) const;
  Result<Group*> createGroup(const std::string& peer, const PlaceMsg& m);
  Status joinGroup(Group& g, const PlaceMsg& m) const;
  void refuse(const std::string& peer, const PlaceMsg& place, Status why, bool retryable);
  void onPartMessage(const PartKey& key, Part& part, const KvMessage& message);
  void markLayers(const PartKey& key, std::int64_t layer);
  void readLayers(const PartKey& key, std::int64_t layer);
  void onMoveDone(const PartKey& key, MoveId move, const MoveResult& result);
  void confirmPart(const PartKey& key, Part& part, Group& g);
  // Fails the request of `trigger` (its own peer is told unless `tellTrigger` is false;
  // the peers of the other unconfirmed parts are told).
  void failGroup(Group& g, Status why, const PartKey* trigger, bool tellTrigger);
  void failPart(const PartKey& key, Part& part, bool tellPeer);
  void maybeFinishPart(const PartKey& key);
  void maybeFinishGroup(const std::string& id);
  // Releases the request's prefix pins and frees its own blocks (keeping full prefix chunks
  // in the cache if `keepPrefixes`); with a `hold`, or `writers` that may still write into
  // them, the blocks stay out of the pool (held_, freed by releaseHeld).
  void returnBlocks(Group& g, bool keepPrefixes, Clock::duration hold = Clock::duration::zero(),
                    std::vector<LostWriter> writers = {});
  // Gives `extents` back to the allocator (filling them for the canary first, if any).
  Status freeBlocks(std::span<const kv::BlockExtent> extents);
  // Takes `count` blocks from the allocator for request `id`; with a canary, logs every
  // block found written while it was free.
  Result<std::vector<kv::BlockExtent>> takeBlocks(std::uint64_t count, const std::string& id);
  // With a canary: checks `extents` (free until now), logging each block written meanwhile.
  void reportLateWrites(std::span<const kv::BlockExtent> extents, const std::string& when);
  void broadcastCapacity();
  void publish(Group& g);
  Group* findGroup(const std::string& id);
  Part* findPart(const PartKey& key);
  std::uint32_t layers() const { return context_.pool.shape.layers; }
  std::uint32_t heads() const { return context_.pool.shape.kvHeads; }

  SideContext& context_;
  kv::PrefixCache cache_;
  placement::LeaseTable leases_;  // by group id
  std::map<std::string, Group> groups_;
  HeldBlocks held_;                            // blocks of requests lost with their PUSH peer
  std::map<std::string, PeerWriter> writers_;  // of the prefill agents joined now
  std::map<PartKey, Part> parts_;
  std::unordered_set<std::string> peers_;
  bool accepting_ = true;
};

}  // namespace kvx::kv::handoff
