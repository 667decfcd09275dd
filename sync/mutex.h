#pragma once

// kvx::sync::Mutex: a std::mutex that clang's thread-safety analysis knows as a lock
// (sync/thread_annotations.h), with its scoped holders:
//   - MutexLock: holds it for a scope (std::lock_guard);
//   - UniqueLock: holds it for a scope, may give it up and take it again inside that scope,
//     and hands a std::unique_lock<std::mutex> to std::condition_variable's waits.
//
//   sync::Mutex mutex_;
//   std::condition_variable changed_;
//   bool ready_ KVX_GUARDED_BY(mutex_) = false;
//
//   sync::UniqueLock lock(mutex_);
//   changed_.wait(lock.native(), [&]() KVX_REQUIRES(mutex_) { return ready_; });
//
// Thread safety: what std::mutex guarantees (not recursive; unlock() by the thread that holds
// it). A wait on lock.native() gives the mutex up and has it again when it returns, so the
// analysis, which sees the lock held throughout, stays right about the code around it.

#include <mutex>

#include "sync/thread_annotations.h"

namespace kvx::sync {

class KVX_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // lock, unlock and try_lock keep std's names: Mutex is a Lockable.
  void lock() KVX_ACQUIRE() { mutex_.lock(); }
  void unlock() KVX_RELEASE() { mutex_.unlock(); }
  bool try_lock() KVX_TRY_ACQUIRE(true) { return mutex_.try_lock(); }

  // Tells the analysis that the calling thread holds the mutex, where it cannot see it: a
  // callback that a library runs under the lock. Checks nothing at run time.
  void assumeHeld() const KVX_ASSERT_CAPABILITY(this) {}

  // The std::mutex itself, for UniqueLock; locking it directly bypasses the analysis.
  std::mutex& native() KVX_RETURN_CAPABILITY(this) { return mutex_; }

 private:
  std::mutex mutex_;
};

// Holds `mutex` from construction to the end of the scope.
class KVX_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) KVX_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  // Takes over a hold the caller already has (after a successful try_lock()).
  MutexLock(Mutex& mutex, std::adopt_lock_t) KVX_REQUIRES(mutex) : mutex_(mutex) {}
  ~MutexLock() KVX_RELEASE() { mutex_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mutex_;
};

// Holds `mutex` from construction to the end of the scope, except between unlock() and
// lock(). The destructor releases it only if held.
class KVX_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mutex) KVX_ACQUIRE(mutex) : lock_(mutex.native()) {}
  ~UniqueLock() KVX_RELEASE() {}
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  // REQUIRES: held. Gives the mutex up before the end of the scope.
  void unlock() KVX_RELEASE() { lock_.unlock(); }
  // REQUIRES: not held (after unlock()). Takes the mutex again.
  void lock() KVX_ACQUIRE() { lock_.lock(); }

  // For std::condition_variable::wait, wait_for and wait_until, and nothing else: a wait
  // returns with the mutex held again; unlocking it through this reference would hide that
  // from the analysis.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace kvx::sync
