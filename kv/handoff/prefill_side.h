#pragma once

// PrefillSide: the life of each request on the prefill agent.
//   queued (waiting for a destination) -> placing (place sent) -> placed (destination
//   blocks known) -> transferring -> complete (destination confirmed) -> released (source
//   blocks freed); failed from any state, with a Status.
// PUSH: this side WRITEs each ready layer (or everything) with a "data" message behind the
// data. PULL: this side sends "ready" messages and the decode side READs.
// Failure: this side first drains its own moves; it frees its source blocks once nothing
// can touch them any more: at once in PUSH (it is the only mover), after the decode side's
// abortAck (or its death, or the lease) in PULL. The failure is published (state failed,
// with its Status) as soon as our own moves have drained, without waiting for that
// acknowledgement: the request then stays live (its id taken, its blocks reserved) only
// until the acknowledgement comes.
//
// Threads: every member runs on the KV service thread.

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kv/handoff/in_flight_moves.h"
#include "kv/handoff/side_context.h"
#include "kv/placement/placement_scheduler.h"
#include "kv/placement/wait_queue.h"

namespace kvx::kv::handoff {

class PrefillSide {
 public:
  explicit PrefillSide(SideContext& context);

  Status submit(const KvRequestSpec& spec);
  Status layerReady(const std::string& id, std::uint32_t layer);
  Status cancel(const std::string& id, Status why);

  // A decode peer finished the KV handshake (or reported its capacity).
  void onPeerReady(const std::string& peer, std::uint64_t totalBlocks, std::uint64_t freeBlocks,
                   std::uint32_t kvHeads);
  void onPeerGone(const std::string& peer, const Status& why);
  void onMessage(const std::string& peer, const KvMessage& message);
  // Deadlines: request timeouts, queue expiry, abort acknowledgements.
  void onTick();
  // Fails every live request with `why`.
  void failAll(const Status& why);
  // Fails with `why` every live request that waits for its producer: a layer not handed over
  // yet (layerReady), or source blocks the producer may still write (keepSourceForProducer).
  // For when the producer is gone.
  void failAwaitingProducer(const Status& why);
  std::size_t liveRequests() const { return requests_.size(); }
  std::vector<KvPeerStatus> peerViews() const;

 private:
  struct Request {
    KvRequestSpec spec;
    // Its current placement (PlaceMsg::attempt), numbered anew by each place sent: a
    // message about an earlier placement, or an earlier request of the same id, is not about
    // this one. 0 before the first.
    std::uint64_t attempt = 0;
    KvMode mode = KvMode::kPush;
    KvRequestStatus view;
    Clock::time_point submitted;
    Deadline deadline;
    std::vector<std::uint64_t> destination;
    std::vector<bool> ready, sent;
    bool placing = false;
    bool placed = false;
    bool confirmed = false;
    InFlightMoves moves;
    bool failing = false;
    bool abortPending = false;  // tell the peer once our moves drained
    bool ackOwed = false;       // the peer aborted: acknowledge once our moves drained
    bool awaitingAck = false;
    // The producer writes no more into the source blocks (KvRequestSpec::keepSourceForProducer).
    bool producerDone = true;
    Deadline ackDeadline{};
    std::uint64_t bytesEstimate = 0;
    std::uint64_t expectedPrefixBlocks = 0;
    std::string waitReason;  // why the scheduler last said wait
  };

  // INVALID_ARGUMENT unless a sliced request names its destination and fits this pool.
  Status checkSlice(const KvRequestSpec& spec) const;
  // The bytes one block of the request moves (a slice moves some heads of it).
  std::uint64_t slicedBlockBytes(const KvRequestSpec& spec) const;
  static kv::HeadSlice sliceOf(const KvRequestSpec& spec);
  void tryPlace(Request& r);
  void retryQueued();
  void onPlaced(Request& r, const PlacedMsg& m);
  void onRefused(Request& r, const RefusedMsg& m);
  void onConfirm(Request& r, const ConfirmMsg& m);
  void updateFree(const std::string& peer, std::uint64_t freeBlocks);
  void startMoves(Request& r);
  void moveLayers(Request& r, std::int64_t layer);
  void onMoveDone(const std::string& id, MoveId move, const MoveResult& result);
  void fail(Request& r, Status why, bool tellPeer);
  // Fails with `why` each live request `which` selects, taking its producer as done.
  void failWhere(const Status& why, const std::function<bool(const Request&)>& which);
  void maybeFinish(const std::string& id);
  // What a failed send to `peer` means for the request: PEER_FAILED for a peer the data
  // path no longer knows (NOT_FOUND), else `sent` itself.
  static Status sendFailure(const std::string& peer, Status sent);
  // Publishes the failure of a failing request whose own moves have drained (once).
  void reportFailed(Request& r);
  void publish(Request& r);
  Request* find(const std::string& id);
  std::uint32_t layers() const { return context_.pool.shape.layers; }

  SideContext& context_;
  placement::PlacementScheduler scheduler_;
  placement::WaitQueue queue_;
  std::map<std::string, Request> requests_;
  std::uint64_t lastAttempt_ = 0;
  std::unordered_map<std::string, bool> peersAlive_;
  // Peers lost since their last handshake: with KvAgentOptions::reconnect, requests pinned
  // to one wait for it (until their deadline) instead of failing as for an unknown name.
  std::unordered_set<std::string> redialed_;
};

}  // namespace kvx::kv::handoff
