#pragma once

// RemoteStagedWire: the initiator's side of target-side staging for one transfer start. It
// moves pieces (each at most one of the peer's window slots) between memory this side's
// transport can reach (a registered host region, or a staging buffer) and GPU regions of
// the peer, through the peer's staging window (staging_message.h has the protocol). A piece
// is one or more parts packed back to back in the slot, so that small operations share a
// slot and its round trips; parts whose local memory is contiguous move as one RMA operation:
//   write: request a slot -> put the piece into it and flush -> ask for the copy -> copied
//   read:  request the copy into a slot -> get the piece from it -> release the slot
// A piece's `done` fires once the bytes are in the peer's device memory (write) or in this
// side's memory (read), or with the first error: a refusal or failed copy on the peer (its
// message), a failed RMA operation, no reply within the reply timeout (TIMED_OUT), or the
// link to the peer reset or failed while a reply was awaited.
//
// After cancel() no new piece starts and pieces not yet past the point of no return end
// CANCELLED (a granted slot is given back unused); a write whose copy was requested waits
// for the peer's answer (or the timeout, or a link reset), so that the owner reports the
// transfer only once no more byte will land.
//
// Events (replies from the transport's message handler, RMA completions from completion
// context, deadlines from tick()) are only queued here, followed by `notify`; the owner calls
// deliverCompleted() from a thread that holds no transport lock, which acts on them and runs
// the pieces' callbacks.
//
// Thread safety: every member may be called from any thread; post() and deliverCompleted()
// never in transport completion or message-handler context. Lifetime: REQUIRES the owner
// keeps the wire until every posted piece's `done` fired, and the local memory of a piece
// valid until then.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/gpu/staged_wire.h"
#include "engine/peer/remote_peer.h"
#include "engine/staged/staging_message.h"
#include "sync/mutex.h"

namespace kvx::engine {

struct RemotePart {
  void* local = nullptr;
  const TransportMemory* localMemory = nullptr;  // the registration that contains `local`
  RegionId region;                               // the peer's GPU region
  std::uint64_t offset = 0;                      // into the region
  std::uint64_t length = 0;
};

struct RemotePiece {
  std::vector<RemotePart> parts;  // at most kMaxStagingRanges, one slot in all
};

class RemoteStagedWire {
 public:
  struct Config {
    std::shared_ptr<RemotePeer> peer;
    std::shared_ptr<PeerLink> link;
    std::shared_ptr<const RemotePeer::Window> window;
    const RemoteKey* windowKey = nullptr;  // the window's key unpacked on `link`
    bool write = true;
    std::uint32_t wireId = 0;                 // the high half of this wire's request ids
    std::vector<std::uint8_t> requestHeader;  // a kStagingRequest header naming this agent
    std::chrono::milliseconds replyTimeout{5000};
    std::function<void()> notify;  // as StagedRmaWire's: flag the owner, wake progress
  };

  explicit RemoteStagedWire(Config config);
  ~RemoteStagedWire();

  RemoteStagedWire(const RemoteStagedWire&) = delete;
  RemoteStagedWire& operator=(const RemoteStagedWire&) = delete;

  std::uint64_t slotBytes() const { return config_.window->slotBytes; }
  std::uint32_t slots() const { return config_.window->slots; }

  // Starts moving one piece; `done` fires exactly once (see above).
  void post(const RemotePiece& piece, gpu::WireCallback done);
  void cancel();

  // From the transport's message handler: queues the reply.
  void onReply(const StagingReply& reply);
  // Queues TIMED_OUT for pieces whose reply is late, and a failure for every piece awaiting a
  // reply when the peer's link is no longer the one the wire uses.
  void tick(std::chrono::steady_clock::time_point now);
  // Acts on queued events and runs the callbacks of finished pieces; true if there were any.
  bool deliverCompleted();

 private:
  struct RmaSink;
  enum class Stage : std::uint8_t { kRequested, kMoving, kCopying };
  struct Piece {
    RemotePiece piece;
    gpu::WireCallback done;
    Stage stage = Stage::kRequested;
    std::uint32_t slot = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  struct Event {
    enum class Kind : std::uint8_t { kReply, kRmaDone, kFail } kind;
    std::uint64_t requestId = 0;
    StagingReply reply;
    Status status;
  };
  struct Finished {
    gpu::WireCallback done;
    Status status;
  };

  void queue(Event event);
  // Acts on one event under mutex_; messages to send and callbacks to run are collected.
  void handleLocked(Event& event, std::vector<StagingRequest>& send,
                    std::vector<Finished>& finished, std::vector<std::uint64_t>& moves)
      KVX_REQUIRES(mutex_);
  void startMove(std::uint64_t requestId);
  void sendRequests(const std::vector<StagingRequest>& requests);
  std::string describePiece(const Piece& piece) const;

  const Config config_;

  sync::Mutex mutex_;  // leaf lock: never held while calling the endpoint or a callback
  std::unordered_map<std::uint64_t, Piece> pieces_ KVX_GUARDED_BY(mutex_);  // by request id
  std::deque<Event> events_ KVX_GUARDED_BY(mutex_);
  std::uint32_t nextPiece_ KVX_GUARDED_BY(mutex_) = 0;
  bool cancelled_ KVX_GUARDED_BY(mutex_) = false;
};

}  // namespace kvx::engine
