// kvx-test-labels: unit
#include "kv/handoff/task_loop.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>

using namespace kvx;
using kvx::kv::handoff::TaskLoop;
using namespace std::chrono_literals;

TEST_CASE("a call runs its task on the loop thread and returns its result", "[task_loop]") {
  TaskLoop loop(1h, [] {});
  std::thread::id ranOn;
  Result<int> result = loop.call<int>(
      [&]() -> Result<int> {
        ranOn = std::this_thread::get_id();
        return 42;
      },
      deadlineIn(5000ms));
  REQUIRE(result.isOk());
  CHECK(*result == 42);
  CHECK(ranOn != std::this_thread::get_id());
  CHECK(loop.callStatus([] { return Status::ok(); }, deadlineIn(5000ms)).isOk());
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
