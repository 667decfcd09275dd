#pragma once

// NotificationInbox: notifications received from peers, oldest first, with a bounded wait.
// Thread safety: all members may be called from any thread; push() does not block on takers.

#include <condition_variable>
#include <deque>
#include <vector>

#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

class NotificationInbox {
 public:
  void push(Notification notification);
  std::vector<Notification> take(std::size_t max);
  // The oldest notification, or nothing if none is there now.
  std::optional<Notification> tryTake();
  // Waits until one arrives or the deadline passes (TIMED_OUT); CANCELLED once closed with
  // none queued.
  Result<Notification> waitTake(Deadline deadline);
  std::size_t size() const;
  // Wakes every waitTake in progress, and makes later ones return at once (CANCELLED when
  // nothing is queued). Idempotent.
  void close();
  bool closed() const;

 private:
  mutable sync::Mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Notification> queue_ KVX_GUARDED_BY(mutex_);
  bool closed_ KVX_GUARDED_BY(mutex_) = false;
};

}  // namespace kvx::engine
