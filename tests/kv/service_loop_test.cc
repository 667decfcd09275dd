// kvx-test-labels: unit
// ServiceLoop: tasks posted before start() or after close() are dropped, a poster may outlive
// the loop, and a started loop runs what is posted and ticks.
#include "kv/service_loop.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

using namespace kvx;
using namespace std::chrono_literals;

namespace {

bool eventually(const std::function<bool()>& done) {
  const auto until = Clock::now() + 5s;
  while (!done()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

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
