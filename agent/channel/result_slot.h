#pragma once

// ResultSlot<T>: a one-shot Result handed from the channel thread to a caller that blocks on
// it with a deadline. The first set() wins; later ones are ignored, so a timer, an error and
// a reply may race to complete the same operation. Thread-safe; shared by shared_ptr.

#include <condition_variable>
#include <optional>
#include <utility>

#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::agent::channel {

template <typename T>
class ResultSlot {
 public:
  // Returns false when the slot was already set.
  bool set(Result<T> result) {
    {
      sync::MutexLock lock(mutex_);
      if (result_) return false;
      result_.emplace(std::move(result));
    }
    ready_.notify_all();
    return true;
  }

  bool isSet() const {
    sync::MutexLock lock(mutex_);
    return result_.has_value();
  }

  // The result, or nullopt if none was set by `deadline`.
  std::optional<Result<T>> waitUntil(Deadline deadline) {
    sync::UniqueLock lock(mutex_);
    ready_.wait_until(lock.native(), deadline,
                      [this]() KVX_REQUIRES(mutex_) { return result_.has_value(); });
    return result_;
  }

 private:
  mutable sync::Mutex mutex_;
  std::condition_variable ready_;
  std::optional<Result<T>> result_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::agent::channel
