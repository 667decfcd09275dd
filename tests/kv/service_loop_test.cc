// kvx-test-labels: unit
// ServiceLoop: tasks posted before start() or after close() are dropped, a poster may outlive
// the loop, and a started loop runs what is posted and ticks.
#include "kv/service_loop.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "tests/support/eventually.h"

using namespace kvx;
using namespace std::chrono_literals;
using kvx::test::eventually;

TEST_CASE("a service loop forwards posted tasks only between start and close") {
  std::atomic<int> ran{0};
  std::atomic<int> ticks{0};
  auto loop = std::make_unique<kv::ServiceLoop>();
  auto post = loop->poster();
  post([&] { ran += 1; });  // not started: dropped
  loop->post([&] { ran += 1; });
  CHECK_FALSE(loop->started());
  loop->start(5ms, [&] { ticks += 1; });
  CHECK(loop->started());
  post([&] { ran += 10; });
  loop->post([&] { ran += 100; });
  CHECK(eventually([&] { return ran.load() == 110; }));
  CHECK(eventually([&] { return ticks.load() > 0; }));
  auto answer = loop->loop().call<int>([] { return Result<int>(7); }, deadlineIn(5s));
  REQUIRE(answer.isOk());
  CHECK(*answer == 7);
  loop->close();
  post([&] { ran += 1000; });
  loop.reset();
  post([&] { ran += 1000; });  // the loop is gone: dropped, nothing touched
  CHECK(ran.load() == 110);
}

TEST_CASE("a runner runs a task in place when the loop is idle, and posts it otherwise") {
  auto loop = std::make_unique<kv::ServiceLoop>();
  auto run = loop->runner();
  std::atomic<int> ran{0};
  run([&] { ran += 1; });  // not started: dropped
  loop->start(1h, [] {});
  std::thread::id ranOn;
  run([&] {
    ranOn = std::this_thread::get_id();
    ran += 10;
  });
  CHECK(ran.load() == 10);  // ran already, here
  CHECK(ranOn == std::this_thread::get_id());

  // A busy loop: the task waits its turn on the loop thread.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> blocking{false};
  loop->post([&, released] {
    blocking.store(true);
    released.wait();
  });
  while (!blocking.load()) std::this_thread::yield();
  std::atomic<bool> elsewhere{false};
  const auto caller = std::this_thread::get_id();
  run([&] {
    elsewhere.store(std::this_thread::get_id() != caller);
    ran += 100;
  });
  CHECK(ran.load() == 10);  // not in place: queued behind the blocked task
  release.set_value();
  CHECK(eventually([&] { return ran.load() == 110; }));
  CHECK(elsewhere.load());

  loop->close();
  run([&] { ran += 1000; });  // closed: dropped
  loop.reset();
  run([&] { ran += 1000; });  // gone: dropped
  CHECK(ran.load() == 110);
}

TEST_CASE("a loop is destroyed only once a task another thread runs in place has ended") {
  auto loop = std::make_unique<kv::ServiceLoop>();
  loop->start(1h, [] {});
  auto run = loop->runner();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> inside{false};
  std::atomic<bool> ended{false};
  std::thread runner([&, released] {
    run([&, released] {
      inside.store(true);
      released.wait();
      std::this_thread::sleep_for(20ms);
      ended.store(true);
    });
  });
  while (!inside.load()) std::this_thread::yield();
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    loop.reset();
    destroyed.store(true);
  });
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(destroyed.load());  // waits for the task in place
  release.set_value();
  destroyer.join();
  CHECK(ended.load());  // it ended before the destructor returned
  runner.join();
}
