#include "engine/notify/notification_inbox.h"

namespace kvx::engine {

void NotificationInbox::push(Notification notification) {
  {
    sync::MutexLock lock(mutex_);
    queue_.push_back(std::move(notification));
  }
  arrived_.notify_all();
}

std::vector<Notification> NotificationInbox::take(std::size_t max) {
  std::vector<Notification> out;
  sync::MutexLock lock(mutex_);
  while (!queue_.empty() && out.size() < max) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return out;
}

std::optional<Notification> NotificationInbox::tryTake() {
  sync::MutexLock lock(mutex_);
  if (queue_.empty()) return std::nullopt;
  Notification n = std::move(queue_.front());
  queue_.pop_front();
  return n;
}

Result<Notification> NotificationInbox::waitTake(Deadline deadline) {
  sync::UniqueLock lock(mutex_);
  if (!arrived_.wait_until(lock.native(), deadline,
                           [&]() KVX_REQUIRES(mutex_) { return !queue_.empty() || closed_; })) {
    return timedOut("no notification arrived before the deadline");
  }
  if (queue_.empty()) return cancelled("the agent is closing: no notification will be waited for");
  Notification n = std::move(queue_.front());
  queue_.pop_front();
  return n;
}

void NotificationInbox::close() {
  {
    sync::MutexLock lock(mutex_);
    closed_ = true;
  }
  arrived_.notify_all();
}

bool NotificationInbox::closed() const {
  sync::MutexLock lock(mutex_);
  return closed_;
}

std::size_t NotificationInbox::size() const {
  sync::MutexLock lock(mutex_);
  return queue_.size();
}

}  // namespace kvx::engine
