#pragma once

// ResultSlot<T>: a one-shot Result handed from the channel thread to a caller that blocks on
// it with a deadline. The first set() wins; later ones are ignored, so a timer, an error and
// a reply may race to complete the same operation. Thread-safe; shared by shared_ptr.

#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>

#include "kvx/result.h"
#include "kvx/transfer.h"

namespace kvx::agent::channel {

template <typename T>
class ResultSlot {
 public:
  // Returns false when the slot was already set.
  bool set(Result<T> result) {
    {
      std::lock_guard lock(mutex_);
      if (result_) return false;
      result_.emplace(std::move(result));
    }
    ready_.notify_all();
    return true;
  }

  bool isSet() const {
    std::lock_guard lock(mutex_);
    return result_.has_value();
  }

  // The result, or nullopt if none was set by `deadline`.
  std::optional<Result<T>> waitUntil(Deadline deadline) {
    std::unique_lock lock(mutex_);
    ready_.wait_until(lock, deadline, [this] { return result_.has_value(); });
    return result_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::optional<Result<T>> result_;  // GUARDED_BY(mutex_)
};

}  // namespace kvx::agent::channel
