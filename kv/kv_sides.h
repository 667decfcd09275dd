#pragma once

// KvSides: a KV agent's request state machines, as its role has them: the prefill side
// (PrefillSide) or the decode side (DecodeSide), with what they share (SideContext) and the
// published view of their requests (RequestBoard). What both kinds of side answer (a peer's
// coming and going, its messages, the tick, shutdown) goes to the one there is; what only
// one answers is reached through prefill() or decode(), null on the other role.
//
// Threads: board() from any thread (it is thread-safe); everything else on the KV service
// thread.

#include <functional>
#include <memory>
#include <string>

#include "kv/handoff/decode_side.h"
#include "kv/handoff/peer_writer.h"
#include "kv/handoff/prefill_side.h"
#include "kv/handoff/request_board.h"
#include "kv/handoff/side_context.h"
#include "kv/kv_peer_directory.h"
#include "kv/local_pool.h"

namespace kvx::kv {

class KvSides {
 public:
  // REQUIRES: `local` outlives this. `postToLoop` runs a task on the service thread.
  KvSides(const KvAgentOptions& options, LocalPool& local,
          std::function<void(std::function<void()>)> postToLoop);

  handoff::RequestBoard& board() { return board_; }
  handoff::PrefillSide* prefill() { return prefill_.get(); }
  handoff::DecodeSide* decode() { return decode_.get(); }

  // A compatible peer was taken in (`writer`: how it writes into this pool, for the decode
  // side), or left.
  void onPeerReady(const std::string& peer, const KvPeer& entry, handoff::PeerWriter writer);
  void onPeerGone(const std::string& peer, const Status& why);
  void onMessage(const std::string& peer, const handoff::KvMessage& message);
  // Whether handling `message` can post no move (placed starts the prefill side's writes,
  // ready the decode side's reads; abort is left to the service thread too): posting a move
  // may wait for a data-path link being reset, which needs the progress thread, so only
  // these may be handled on it.
  static bool postsNoMove(const handoff::KvMessage& message);
  void onTick();

  // Shutdown: stop taking requests; fail the live ones; then the blocks still held go back
  // and, with a canary, every free block is checked once more.
  void stopAccepting();
  void failAll(const Status& why);
  void releaseAllAndCheck();
  // The application is gone (the agent is being destroyed): ends at once every request that
  // only it could take further. A prefill request still waiting for layers (layerReady) or for
  // the producer to finish with its source fails with `why`; a decode request handed out
  // (complete or consumed, waiting for release) is released.
  void endApplicationWaits(const Status& why);

  std::size_t liveRequests() const;
  std::uint64_t availableBlocks() const;

 private:
  handoff::RequestBoard board_;
  handoff::SideContext context_;
  std::unique_ptr<handoff::PrefillSide> prefill_;
  std::unique_ptr<handoff::DecodeSide> decode_;
};

}  // namespace kvx::kv
