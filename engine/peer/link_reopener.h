#pragma once

// LinkReopener: opens peers' next data-path links after resets of this agent's own, on a
// thread of its own, so that a cancel that had to reset a link returns once the old link
// closed (bounded) instead of also waiting for the new endpoint to open (unbounded: UCX
// opens it before returning). Transfers and notifications meanwhile wait for the link
// (RemotePeer::awaitLink, linkWhenReady).
//
// Before it opens a link it may ask a ReopenGate to wait until the peer is heard from (the
// agent passes one that watches its control link). Over tcp, opening an endpoint connects a
// socket before UCX returns, holding the transport's only worker: toward a peer whose
// packets are all dropped, for the kernel's whole SYN retransmission time (measured here:
// 134 s), stalling every other peer's transfers with it. A cut peer is declared failed
// within the peer timeout instead, and a failed peer gets no new link.
//
// Threads: reopen() may be called from any thread. The thread starts at the first reopen().
// stop() (and the destructor) finishes what is queued, then joins: call it after failing
// the peers, so that the queued reopens only clean up.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "engine/peer/remote_peer.h"
#include "sync/mutex.h"

namespace kvx::engine {

// Waits until a peer has been heard from after a reset began, before its next link opens.
struct ReopenGate {
  // Waits until `peer` has been heard from after `since`, or until there is no point in
  // waiting: `abandon()` returns true (the peer failed, the engine stops), or `longest`
  // passed since `since`. Returns whether the peer was heard from. Called on the reopener's
  // thread.
  std::function<bool(const std::string& peer, Clock::time_point since,
                     const std::function<bool()>& abandon)>
      wait;
  // The longest `wait` takes; transfers waiting for the reset's link (RemotePeer::awaitLink)
  // wait this much longer than they would without a gate.
  Clock::duration longest{};

  explicit operator bool() const { return static_cast<bool>(wait); }
};

class LinkReopener {
 public:
  LinkReopener() = default;
  // Until it is set, links reopen at once. Call before the first reopen().
  void setGate(ReopenGate gate) { gate_ = std::move(gate); }
  ~LinkReopener();
  LinkReopener(const LinkReopener&) = delete;
  LinkReopener& operator=(const LinkReopener&) = delete;

  // Queues peer->finishReset(). REQUIRES: peer->beginReset() returned true. After stop(),
  // runs it on the caller's thread.
  void reopen(std::shared_ptr<RemotePeer> peer);
  void stop();

 private:
  void run();
  void awaitGate(const RemotePeer& peer);

  ReopenGate gate_;
  std::atomic<bool> stopRequested_{false};  // stopping_, readable by the gate without mutex_
  sync::Mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<RemotePeer>> queue_ KVX_GUARDED_BY(mutex_);
  bool stopping_ KVX_GUARDED_BY(mutex_) = false;
  std::thread thread_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine
