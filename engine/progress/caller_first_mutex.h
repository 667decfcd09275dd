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
// It is a capability for clang's thread-safety analysis (sync/thread_annotations.h): state
// it guards is KVX_GUARDED_BY it. Held through CallerLock (callers) or ProgressLock (the
// polling side) for a scope.
//
// Thread safety: any thread. lockForProgress() is meant for the one thread that polls; it is
// correct (only less polite) from several.

#include <atomic>
#include <mutex>

#include "sync/thread_annotations.h"

namespace kvx::engine {

class KVX_CAPABILITY("mutex") CallerFirstMutex {
 public:
  // Takes the mutex as a caller: ahead of the progress side's next round.
  void lockForCaller() KVX_ACQUIRE() {
    callersWaiting_.fetch_add(1, std::memory_order_acq_rel);
    mutex_.lock();
    if (callersWaiting_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      callersWaiting_.notify_all();
    }
  }

  // Takes the mutex for the polling side: once no caller is announced.
  void lockForProgress() KVX_ACQUIRE() {
    for (int waiting = callersWaiting_.load(std::memory_order_acquire); waiting > 0;
         waiting = callersWaiting_.load(std::memory_order_acquire)) {
      callersWaiting_.wait(waiting, std::memory_order_acquire);
    }
    mutex_.lock();
  }

  // Takes the mutex as a plain std::mutex does, neither announced nor yielding: for a holder
  // that let it go for a moment inside its scope (a wait) and takes it back.
  void relock() KVX_ACQUIRE() { mutex_.lock(); }

  void unlock() KVX_RELEASE() { mutex_.unlock(); }

  // Tells the analysis that the calling thread holds the mutex, where it cannot see it: a
  // callback that a library runs under the lock. Checks nothing at run time.
  void assumeHeld() const KVX_ASSERT_CAPABILITY(this) {}

  // Callers announced and not yet in: for tests and diagnostics.
  int callersWaiting() const { return callersWaiting_.load(std::memory_order_acquire); }

 private:
  std::mutex mutex_;
  std::atomic<int> callersWaiting_{0};
};

// Holds a CallerFirstMutex as a caller from construction to the end of the scope, except
// between unlock() and lock().
class KVX_SCOPED_CAPABILITY CallerLock {
 public:
  explicit CallerLock(CallerFirstMutex& mutex) KVX_ACQUIRE(mutex) : mutex_(mutex) {
    mutex_.lockForCaller();
  }
  ~CallerLock() KVX_RELEASE() {
    if (held_) mutex_.unlock();
  }
  CallerLock(const CallerLock&) = delete;
  CallerLock& operator=(const CallerLock&) = delete;

  // REQUIRES: held. Gives the mutex up before the end of the scope.
  void unlock() KVX_RELEASE() {
    mutex_.unlock();
    held_ = false;
  }
  // REQUIRES: not held. Takes it again, as a plain mutex (CallerFirstMutex::relock).
  void lock() KVX_ACQUIRE() {
    mutex_.relock();
    held_ = true;
  }
  bool owns_lock() const { return held_; }

 private:
  CallerFirstMutex& mutex_;
  bool held_ = true;
};

// Holds a CallerFirstMutex for the polling side from construction to the end of the scope.
class KVX_SCOPED_CAPABILITY ProgressLock {
 public:
  explicit ProgressLock(CallerFirstMutex& mutex) KVX_ACQUIRE(mutex) : mutex_(mutex) {
    mutex_.lockForProgress();
  }
  ~ProgressLock() KVX_RELEASE() { mutex_.unlock(); }
  ProgressLock(const ProgressLock&) = delete;
  ProgressLock& operator=(const ProgressLock&) = delete;

  bool owns_lock() const { return true; }

 private:
  CallerFirstMutex& mutex_;
};

}  // namespace kvx::engine
