#pragma once

// LinkReopener: opens peers' next data-path links after resets of this agent's own, on a
// thread of its own, so that a cancel that had to reset a link returns once the old link
// closed (bounded) instead of also waiting for the new endpoint to open (unbounded: UCX
// opens it before returning, 1 s under heavy loss). Transfers and notifications meanwhile
// wait for the link (RemotePeer::awaitLink, linkWhenReady).
//
// Threads: reopen() may be called from any thread. The thread starts at the first reopen().
// stop() (and the destructor) finishes what is queued, then joins: call it after failing
// the peers, so that the queued reopens only clean up.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/peer/remote_peer.h"

namespace kvx::engine {

class LinkReopener {
 public:
  LinkReopener() = default;
  ~LinkReopener();
  LinkReopener(const LinkReopener&) = delete;
  LinkReopener& operator=(const LinkReopener&) = delete;

  // Queues peer->finishReset(). REQUIRES: peer->beginReset() returned true. After stop(),
  // runs it on the caller's thread.
  void reopen(std::shared_ptr<RemotePeer> peer);
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<RemotePeer>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kvx::engine
