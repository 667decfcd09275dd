#pragma once

// CallerFirstMutex: a mutex shared by a progress thread, which takes it again and again in a
// tight loop, and by callers (API threads, the KV service thread) that take it now and then.
// A plain std::mutex is not fair: a progress thread that unlocks and relocks within a few
// hundred nanoseconds wins almost every race against a waiter the kernel has to wake, and a
// caller can wait milliseconds per acquisition behind it (measured on 2 cores: 0.44 ms mean,
// 6 ms worst), seconds over a request's many calls.
//
// The protocol: a caller announces itself before it blocks; the progress side does not take
// the mutex while any caller is announced, it sleeps until the last one is in. So a caller
// waits for at most the one progress round already under way when it arrived, plus the
// callers before it; the progress thread resumes as soon as no caller waits.
//
// Thread safety: any thread. lockForProgress() is meant for the one thread that polls; it is
// correct (only less polite) from several.

#include <atomic>
#include <mutex>

namespace kvx::engine {

class CallerFirstMutex {
 public:
  std::unique_lock<std::mutex> lockForCaller() {
    callersWaiting_.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock lock(mutex_);
    if (callersWaiting_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      callersWaiting_.notify_all();
    }
    return lock;
  }

  std::unique_lock<std::mutex> lockForProgress() {
    for (int waiting = callersWaiting_.load(std::memory_order_acquire); waiting > 0;
         waiting = callersWaiting_.load(std::memory_order_acquire)) {
      callersWaiting_.wait(waiting, std::memory_order_acquire);
    }
    return std::unique_lock(mutex_);
  }

  // Callers announced and not yet in: for tests and diagnostics.
  int callersWaiting() const { return callersWaiting_.load(std::memory_order_acquire); }

 private:
  std::mutex mutex_;
  std::atomic<int> callersWaiting_{0};
};

}  // namespace kvx::engine
