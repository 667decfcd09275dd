// kvx-test-labels: unit
#include "engine/progress/caller_first_mutex.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using kvx::engine::CallerFirstMutex;
using kvx::engine::CallerLock;
using kvx::engine::ProgressLock;

TEST_CASE("a polling thread takes the mutex at most once while a caller waits for it",
          "[caller_first_mutex]") {
  // The progress side relocks as fast as it can; a caller that announced itself must get in
  // before the progress side's next round. Counting, under the lock, the progress rounds that
  // began while a caller waited: the protocol allows one per caller acquisition (the race of
  // a round whose check came just before the announcement). A plain mutex lets the spinning
  // side win many rounds per caller.
  CallerFirstMutex mutex;
  std::atomic<bool> stop{false};
  long roundsWhileCallerWaited = 0;  // under the mutex
  long progressRounds = 0;           // under the mutex
  std::thread progress([&] {
    while (!stop.load()) {
      ProgressLock lock(mutex);
      ++progressRounds;
      if (mutex.callersWaiting() > 0) ++roundsWhileCallerWaited;
      const auto start = std::chrono::steady_clock::now();  // a round of work, lock held
      while (std::chrono::steady_clock::now() - start < std::chrono::microseconds(2)) {
      }
    }
  });
  constexpr int kCallerAcquisitions = 300;
  long callerCount = 0;
  for (int i = 0; i < kCallerAcquisitions; ++i) {
    {
      CallerLock lock(mutex);
      ++callerCount;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // now and then
  }
  stop.store(true);
  progress.join();
  CHECK(callerCount == kCallerAcquisitions);
  CHECK(roundsWhileCallerWaited <= kCallerAcquisitions);
  CHECK(progressRounds > 0);
  CHECK(mutex.callersWaiting() == 0);
}

TEST_CASE("the polling side waits for announced callers and resumes once they are in",
          "[caller_first_mutex]") {
  CallerFirstMutex mutex;
  CallerLock held(mutex);
  std::atomic<int> order{0};
  int callerPlace = 0;
  int progressPlace = 0;
  std::thread caller([&] {
    CallerLock lock(mutex);
    callerPlace = ++order;
  });
  while (mutex.callersWaiting() == 0) std::this_thread::yield();
  std::thread progress([&] {
    ProgressLock lock(mutex);
    progressPlace = ++order;
  });
  held.unlock();
  caller.join();
  progress.join();
  CHECK(callerPlace == 1);
  CHECK(progressPlace == 2);
  CHECK(mutex.callersWaiting() == 0);
}

TEST_CASE("with no caller waiting the polling side takes the mutex at once, and holds it",
          "[caller_first_mutex]") {
  CallerFirstMutex mutex;
  for (int i = 0; i < 3; ++i) {
    ProgressLock lock(mutex);  // returns: nothing announced holds it up
  }
  // Held means held: a caller that announced itself waits until the polling side lets go.
  std::atomic<bool> entered{false};
  std::thread caller;
  {
    ProgressLock lock(mutex);
    caller = std::thread([&] {
      CallerLock inner(mutex);
      entered = true;
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (mutex.callersWaiting() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    CHECK(mutex.callersWaiting() == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // room to get in, were it free
    CHECK_FALSE(entered.load());
  }
  caller.join();
  CHECK(entered.load());
  CHECK(mutex.callersWaiting() == 0);
}
