#pragma once

// DecodeSide: the life of each request on the decode agent.
//   placed (blocks reserved under a lease) -> transferring -> complete (every layer in
//   place; confirm sent; nextArrival() hands it out) -> consumed (the server took it; the
//   lease stops) -> released (blocks back to the pool or the prefix cache); failed from any
//   state (lease expired, aborted by either side, peer failed), freeing what it held.
// Blocks: leading full prefix chunks already cached are reused (pinned), the rest come from
// the allocator (contiguous when possible, evicting unpinned prefix chunks when short).
// PULL: this side READs each layer the prefill side says is ready. PUSH: the prefill side
// writes and a "data" message follows each layer's data.
// Failure: after draining its own reads this side frees its blocks at once in PULL; in PUSH
// it waits for the prefill side's abortAck (or its death), since that side still writes.
//
// Threads: every member runs on the KV service thread.

#include <map>
#include <string>
#include <unordered_set>

#include "agent/handoff/in_flight_moves.h"
#include "agent/handoff/side_context.h"
#include "agent/kv/prefix_cache.h"
#include "agent/placement/lease_table.h"

namespace kvx::agent::handoff {

class DecodeSide {
 public:
  explicit DecodeSide(SideContext& context);

  void onPeerReady(const std::string& peer) { peers_.insert(peer); }
  void onPeerGone(const std::string& peer, const Status& why);
  void onMessage(const std::string& peer, const KvMessage& message);
  void onTick();

  Status consume(const std::string& id);
  Status release(const std::string& id);
  Status dropPrefixCache();
  void failAll(const Status& why);
  // Stop placing new requests (shutdown).
  void stopAccepting() { accepting_ = false; }

  std::size_t liveRequests() const { return requests_.size(); }
  // Free blocks plus unpinned prefix-cache blocks (evicted on demand): what we report.
  std::uint64_t availableBlocks() const;
  const kv::PrefixCache& prefixCache() const { return cache_; }

 private:
  struct Request {
    std::string peer;
    PlaceMsg place;
    KvRequestStatus view;
    std::vector<std::uint64_t> pinnedHashes;  // prefix chunks reused (pinned in the cache)
    std::vector<kv::BlockExtent> ownExtents;  // allocated for this request
    std::vector<std::uint64_t> blocks;        // all destination blocks, in token order
    std::vector<std::uint64_t> source;        // PULL: the prefill side's blocks
    std::vector<bool> layersDone;
    std::uint32_t doneCount = 0;
    InFlightMoves moves;
    bool failing = false;
    bool abortPending = false;  // tell the peer once our reads drained
    bool ackOwed = false;       // the peer aborted: acknowledge once our reads drained
    bool awaitingAck = false;
    Deadline ackDeadline{};
    Clock::time_point placedAt;
  };

  void onPlace(const std::string& peer, const PlaceMsg& m);
  void refuse(const std::string& peer, const std::string& id, Status why, bool retryable);
  void markLayers(Request& r, std::int64_t layer);
  void readLayers(Request& r, std::int64_t layer);
  void onMoveDone(const std::string& id, MoveId move, const MoveResult& result);
  void complete(Request& r);
  void fail(Request& r, Status why, bool tellPeer);
  void maybeFinishFailure(const std::string& id);
  void returnBlocks(Request& r, bool keepPrefixes);
  void broadcastCapacity();
  void publish(Request& r);
  Request* find(const std::string& id);
  std::uint32_t layers() const { return context_.pool.shape.layers; }

  SideContext& context_;
  kv::PrefixCache cache_;
  placement::LeaseTable leases_;
  std::map<std::string, Request> requests_;
  std::unordered_set<std::string> peers_;
  bool accepting_ = true;
};

}  // namespace kvx::agent::handoff
