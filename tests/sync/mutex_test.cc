// kvx-test-labels: unit
#include "sync/mutex.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <vector>

using kvx::sync::Mutex;
using kvx::sync::MutexLock;
using kvx::sync::UniqueLock;

namespace {

struct Counter {
  Mutex mutex;
  long value KVX_GUARDED_BY(mutex) = 0;
};

// Whether another thread can take `mutex` now (it gives it back at once).
bool freeForOthers(Mutex& mutex) {
  bool taken = false;
  std::thread other([&] {
    if (mutex.try_lock()) {
      taken = true;
      mutex.unlock();
    }
  });
  other.join();
  return taken;
}

}  // namespace

TEST_CASE("MutexLock excludes other holders", "[sync]") {
  Counter counter;
  constexpr int kThreads = 4;
  constexpr long kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counter] {
      for (long i = 0; i < kEach; ++i) {
        MutexLock lock(counter.mutex);
        ++counter.value;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  MutexLock lock(counter.mutex);
  CHECK(counter.value == kThreads * kEach);
}

TEST_CASE("try_lock fails while held and a MutexLock adopts a successful one", "[sync]") {
  Counter counter;
  {
    MutexLock held(counter.mutex);
    CHECK_FALSE(freeForOthers(counter.mutex));
  }
  bool adopted = false;
  if (counter.mutex.try_lock()) {
    MutexLock lock(counter.mutex, std::adopt_lock);
    counter.value = 1;
    adopted = true;
  }
  CHECK(adopted);
  CHECK(freeForOthers(counter.mutex));  // the adopting lock released it
}

TEST_CASE("UniqueLock waits on a condition variable and can let go inside its scope", "[sync]") {
  Counter counter;
  std::condition_variable changed;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    {
      MutexLock lock(counter.mutex);
      counter.value = 7;
    }
    changed.notify_all();
  });
  UniqueLock lock(counter.mutex);
  const bool set =
      changed.wait_until(lock.native(), std::chrono::steady_clock::now() + std::chrono::seconds(10),
                         [&]() KVX_REQUIRES(counter.mutex) { return counter.value == 7; });
  CHECK(set);
  lock.unlock();
  CHECK(freeForOthers(counter.mutex));
  lock.lock();
  CHECK(counter.value == 7);
  lock.unlock();  // the destructor leaves an unlocked UniqueLock alone
  setter.join();
}
