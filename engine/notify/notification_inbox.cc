#include "engine/notify/notification_inbox.h"

namespace kvx::engine {

void NotificationInbox::push(Notification notification) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(notification));
  }
  arrived_.notify_all();
}

std::vector<Notification> NotificationInbox::take(std::size_t max) {
  std::vector<Notification> out;
  std::lock_guard lock(mutex_);
  while (!queue_.empty() && out.size() < max) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return out;
}

std::optional<Notification> NotificationInbox::tryTake() {
  std::lock_guard lock(mutex_);
  if (queue_.empty()) return std::nullopt;
  Notification n = std::move(queue_.front());
  queue_.pop_front();
  return n;
}

Result<Notification> NotificationInbox::waitTake(Deadline deadline) {
  std::unique_lock lock(mutex_);
  if (!arrived_.wait_until(lock, deadline, [&] { return !queue_.empty(); })) {
    return timedOut("no notification arrived before the deadline");
  }
  Notification n = std::move(queue_.front());
  queue_.pop_front();
  return n;
}

std::size_t NotificationInbox::size() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

}  // namespace kvx::engine
