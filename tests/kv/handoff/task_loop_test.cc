// kvx-test-labels: unit
#include "kv/handoff/task_loop.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

using namespace kvx;
using kvx::kv::handoff::TaskLoop;
using namespace std::chrono_literals;

TEST_CASE("a call to an idle loop runs its task on the caller's thread, in the loop's turn",
          "[task_loop]") {
  TaskLoop loop(1h, [] {});
  std::thread::id ranOn;
  bool inTurn = false;
  Result<int> result = loop.call<int>(
      [&]() -> Result<int> {
        ranOn = std::this_thread::get_id();
        inTurn = loop.onLoopThread();
        // A call from inside a task runs inline too (it would wait for itself otherwise).
        return loop.call<int>([] { return Result<int>(42); }, deadlineIn(50ms));
      },
      deadlineIn(5000ms));
  REQUIRE(result.isOk());
  CHECK(*result == 42);
  CHECK(ranOn == std::this_thread::get_id());
  CHECK(inTurn);
  CHECK_FALSE(loop.onLoopThread());
  CHECK(loop.callStatus([] { return Status::ok(); }, deadlineIn(5000ms)).isOk());
}

TEST_CASE("a call to a busy loop waits its turn behind the queued tasks, on the loop thread",
          "[task_loop]") {
  TaskLoop loop(1h, [] {});
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> blocking{false};
  std::vector<int> order;  // written by tasks only, one at a time
  std::thread::id loopThread;
  loop.post([&, released] {
    loopThread = std::this_thread::get_id();
    blocking.store(true);
    released.wait();
    order.push_back(1);
  });
  while (!blocking.load()) std::this_thread::yield();
  loop.post([&] { order.push_back(2); });
  auto answer = std::async(std::launch::async, [&] {
    return loop.call<std::thread::id>(
        [&]() -> Result<std::thread::id> {
          order.push_back(3);
          return std::this_thread::get_id();
        },
        deadlineIn(5000ms));
  });
  std::this_thread::sleep_for(20ms);
  release.set_value();
  Result<std::thread::id> ranOn = answer.get();
  REQUIRE(ranOn.isOk());
  CHECK(*ranOn == loopThread);
  CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("tasks posted while a caller runs inline wait for it, then run on the loop thread",
          "[task_loop]") {
  TaskLoop loop(1h, [] {});
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::atomic<int> done{0};
  auto task = [&] {
    if (running.fetch_add(1) != 0) overlapped.store(true);
    std::this_thread::sleep_for(1ms);
    running.fetch_sub(1);
    done.fetch_add(1);
  };
  Status inline_ = loop.callStatus(
      [&] {
        task();
        for (int i = 0; i < 5; ++i) loop.post(task);  // queued behind this call
        std::this_thread::sleep_for(10ms);
        CHECK(done.load() == 1);  // none of them started while the caller holds the turn
        return Status::ok();
      },
      deadlineIn(5000ms));
  CHECK(inline_.isOk());
  const auto until = Clock::now() + 5s;
  while (done.load() < 6 && Clock::now() < until) std::this_thread::sleep_for(1ms);
  CHECK(done.load() == 6);
  CHECK_FALSE(overlapped.load());
}

TEST_CASE("callers and posters on many threads: one task at a time, each thread's in order",
          "[task_loop]") {
  std::atomic<int> ticks{0};
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  TaskLoop loop(1ms, [&] {
    if (running.fetch_add(1) != 0) overlapped.store(true);
    ticks.fetch_add(1);
    running.fetch_sub(1);
  });
  constexpr int kThreads = 4;
  constexpr int kEach = 2000;
  std::vector<std::vector<int>> seen(kThreads);  // written by tasks only
  std::atomic<int> failedCalls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto step = [&, t, i] {
          if (running.fetch_add(1) != 0) overlapped.store(true);
          seen[t].push_back(i);
          running.fetch_sub(1);
        };
        if (i % 2 == 0) {
          loop.post(step);
        } else {
          const Status called = loop.callStatus(
              [&] {
                step();
                return Status::ok();
              },
              deadlineIn(5000ms));
          if (!called.isOk()) failedCalls.fetch_add(1);  // Catch's checks are not thread-safe
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(loop.callStatus([] { return Status::ok(); }, deadlineIn(5000ms)).isOk());
  CHECK(failedCalls.load() == 0);
  CHECK_FALSE(overlapped.load());
  for (int t = 0; t < kThreads; ++t) {
    REQUIRE(seen[t].size() == kEach);
    for (int i = 0; i < kEach; ++i) REQUIRE(seen[t][i] == i);
  }
  // The tick keeps running between callers.
  const int before = ticks.load();
  std::this_thread::sleep_for(20ms);
  CHECK(ticks.load() > before);
}

TEST_CASE("a call the loop cannot answer in time says what holds the loop", "[task_loop]") {
  TaskLoop loop(1h, [] {});
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> blocking{false};
  loop.post([&, released] {
    blocking.store(true);
    released.wait();
  });
  while (!blocking.load()) std::this_thread::yield();
  loop.post([] {});  // queued behind the blocked task, as the call will be

  const Status late = loop.callStatus([] { return Status::ok(); }, deadlineIn(50ms));
  CHECK(late.code() == StatusCode::kTimedOut);
  CHECK_THAT(late.message(), Catch::Contains("did not answer in time") &&
                                 Catch::Contains("inside one task for") &&
                                 Catch::Contains("2 more queued"));
  release.set_value();
  // The loop answers again once the task returns.
  CHECK(loop.callStatus([] { return Status::ok(); }, deadlineIn(5000ms)).isOk());
}
