#pragma once

// PeerDirectory: the peers one engine knows by name, the events of their joins and
// departures, and the LinkReopener that opens a peer's next data-path link after a reset of
// this engine's own. A known name with a new incarnation is a restart: the old peer leaves
// (its transfers fail, its link closes) before the new one joins.
//
// Removal order, which users rely on: the peer's transfers are failed and its link closed
// while it is still listed; only then is it unlisted, the engine told (Hooks::unlisted) and
// its kLeft event sent. Whoever sees a peer gone (find, names, the event) may rely on no
// byte of its data path landing any more (the KV layer frees the blocks a lost peer was
// writing into). A removal in progress on another thread is waited for, up to kRemovalWait.
//
// Owner: the Engine, which builds it before the parts that look peers up.
// Threads: any thread may call any member (normally the control channel's, for joins and
// updates; callers' and the progress thread's, for lookups). Hooks and handlers run on the
// thread that changed the peer set, outside every lock of the directory.
// Locks: mutex_ guards the peer table; handlerMutex_ (a leaf) the handlers' pointers only.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/peer/link_reopener.h"
#include "engine/peer/peer_metadata.h"
#include "engine/peer/remote_peer.h"
#include "engine/transport/transport.h"
#include "kvx/peer_event.h"
#include "kvx/result.h"
#include "sync/mutex.h"

namespace kvx::engine {

class PeerDirectory {
 public:
  // What the rest of the engine does when the peer set changes; each runs outside every
  // directory lock, on the thread that changed it. Set once, at construction.
  struct Hooks {
    // A peer is being removed: fail its pending transfers with `why`. Runs before its link
    // closes, while it is still listed.
    std::function<void(const RemotePeer& peer, const Status& why)> failTransfers;
    // A removed peer's link is closed and it is unlisted: drop what still serves it.
    std::function<void(const std::string& peer)> unlisted;
    // The data path to a peer that just joined, for the log line before its kJoined event.
    std::function<Result<std::string>(const std::string& peer)> describe;
  };
  // See Engine::setDataPathFailureHandler.
  using DataPathFailureHandler = std::function<void(const std::string& peer, const Status& why)>;

  // `self`: this agent's name (refused as a peer's, and the prefix of log lines).
  // REQUIRES: `transport` outlives the directory.
  PeerDirectory(std::string self, Transport& transport, ReopenGate gate, Hooks hooks);
  ~PeerDirectory();

  PeerDirectory(const PeerDirectory&) = delete;
  PeerDirectory& operator=(const PeerDirectory&) = delete;

  // Engine::addOrUpdatePeer, updatePeer, removePeer, peer and peerNames.
  Status addOrUpdate(PeerMetadata metadata);
  Status update(PeerMetadata metadata);
  Status remove(const std::string& name, Status why);
  // NOT_FOUND for a peer not listed; for one removed lately (a data path that failed as it
  // joined, a restart), the error says why it left.
  Result<std::shared_ptr<RemotePeer>> find(const std::string& name) const;
  std::vector<std::string> names() const;

  void setEventHandler(PeerEventHandler handler) KVX_EXCLUDES(handlerMutex_);
  void setDataPathFailureHandler(DataPathFailureHandler handler) KVX_EXCLUDES(handlerMutex_);

  // Resets `peer`'s link for a cancel whose operations did not drain: the close waits at
  // most until `bound`, and the reopener opens the next link later, off the caller's path.
  void resetLink(const std::shared_ptr<RemotePeer>& peer, const std::string& reason,
                 Deadline bound);

  // For the engine's shutdown: fails every listed peer with `why` (their links close) and
  // then stops the reopener, which then only cleans up. Peers stay listed until clear().
  void failAll(const Status& why) KVX_EXCLUDES(mutex_);
  // Drops every peer. REQUIRES: failAll() ran, and nothing adds peers any more.
  void clear() KVX_EXCLUDES(mutex_);

 private:
  // Removes the peer if it is still the given incarnation (any, when unset), in the order
  // the header describes.
  Status removeIf(const std::string& name, std::optional<std::uint64_t> incarnation, Status why)
      KVX_EXCLUDES(mutex_, handlerMutex_);
  void onDataPathFailed(const std::string& name, std::uint64_t incarnation, const Status& why)
      KVX_EXCLUDES(mutex_, handlerMutex_);
  void emitEvent(PeerEvent::Kind kind, const std::string& peer, std::uint64_t incarnation,
                 Status why) KVX_EXCLUDES(mutex_, handlerMutex_);

  // How long removeIf waits for another thread's removal of the same peer (a forced close
  // takes at most 2 s; transfers failing with it take their locks meanwhile).
  static constexpr std::chrono::seconds kRemovalWait{10};
  // How many removed peers' reasons find() can still tell (the oldest is forgotten first).
  static constexpr std::size_t kDepartedKept = 256;

  const std::string self_;
  Transport& transport_;
  const Hooks hooks_;
  const Clock::duration reopenWait_;  // RemotePeer's, plus the gate's longest hold

  mutable sync::Mutex mutex_;
  // Notified when a peer leaves peers_ (removeIf waits on it for a removal in progress).
  std::condition_variable unlisted_;
  std::unordered_map<std::string, std::shared_ptr<RemotePeer>> peers_ KVX_GUARDED_BY(mutex_);
  // Why each peer removed lately left, oldest first (a name at most once; none listed).
  std::deque<std::pair<std::string, Status>> departed_ KVX_GUARDED_BY(mutex_);

  sync::Mutex handlerMutex_;  // guards the handlers' pointers, not their calls
  std::shared_ptr<const PeerEventHandler> eventHandler_ KVX_GUARDED_BY(handlerMutex_);
  std::shared_ptr<const DataPathFailureHandler> failureHandler_ KVX_GUARDED_BY(handlerMutex_);

  LinkReopener reopener_;  // stopped by failAll(), once the peers failed
};

}  // namespace kvx::engine
