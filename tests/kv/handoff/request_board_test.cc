// kvx-test-labels: unit
#include "kv/handoff/request_board.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace kvx;
using kvx::kv::handoff::RequestBoard;
using namespace std::chrono_literals;

namespace {

KvRequestStatus statusOf(const std::string& id, KvRequestState state) {
  KvRequestStatus s;
  s.id = id;
  s.state = state;
  return s;
}

Deadline in(std::chrono::milliseconds d) { return Clock::now() + d; }

}  // namespace

TEST_CASE("request board: each waiter returns when its own request ends", "[handoff]") {
  constexpr int kRequests = 64;
  RequestBoard board;
  std::vector<std::thread> waiters;
  std::atomic<int> released{0};
  std::atomic<int> wrong{0};
  for (int i = 0; i < kRequests; ++i) {
    waiters.emplace_back([&, i] {
      const std::string id = "r" + std::to_string(i);
      auto s = board.waitTerminal(id, in(10s));
      if (!s.isOk() || s->id != id || s->state != KvRequestState::kReleased) {
        ++wrong;
      } else {
        ++released;
      }
    });
  }
  // Changes that are not terminal, then the ends, in reverse order.
  for (int i = 0; i < kRequests; ++i) {
    board.publish(statusOf("r" + std::to_string(i), KvRequestState::kTransferring));
  }
  std::this_thread::sleep_for(5ms);
  CHECK(released.load() == 0);
  for (int i = kRequests - 1; i >= 0; --i) {
    board.publish(statusOf("r" + std::to_string(i), KvRequestState::kReleased));
  }
  for (auto& t : waiters) t.join();
  CHECK(wrong.load() == 0);
  CHECK(released.load() == kRequests);
}

TEST_CASE("request board: two callers waiting on one request both return", "[handoff]") {
  RequestBoard board;
  std::atomic<int> done{0};
  std::thread a([&] {
    if (board.waitTerminal("x", in(10s)).isOk()) ++done;
  });
  std::thread b([&] {
    if (board.waitLayer("x", 1, in(10s)).isOk()) ++done;
  });
  std::this_thread::sleep_for(5ms);
  board.publish(statusOf("x", KvRequestState::kComplete), {true, true});
  board.publish(statusOf("x", KvRequestState::kReleased));
  a.join();
  b.join();
  CHECK(done.load() == 2);
}

TEST_CASE("request board: a layer wait ends on its layer, or on the request's failure",
          "[handoff]") {
  RequestBoard board;
  std::thread layer([&] { CHECK(board.waitLayer("l", 2, in(10s)).isOk()); });
  board.publish(statusOf("l", KvRequestState::kTransferring), {true, false, false});
  board.publish(statusOf("l", KvRequestState::kTransferring), {true, false, true});
  layer.join();

  std::thread failing(
      [&] { CHECK(board.waitLayer("f", 0, in(10s)).code() == StatusCode::kPeerFailed); });
  std::this_thread::sleep_for(2ms);
  KvRequestStatus failed = statusOf("f", KvRequestState::kFailed);
  failed.status = peerFailed("decode-0 left");
  board.publish(failed);
  failing.join();
}

TEST_CASE("request board: waits end at their deadline, however busy other requests are",
          "[handoff]") {
  RequestBoard board;
  std::atomic<bool> churning{true};
  std::thread churn([&] {
    for (int i = 0; churning.load(); ++i) {
      board.publish(statusOf("other" + std::to_string(i % 8), KvRequestState::kTransferring));
    }
  });
  const auto began = Clock::now();
  CHECK(board.waitTerminal("never", in(30ms)).status().code() == StatusCode::kNotFound);
  board.publish(statusOf("stuck", KvRequestState::kPlaced));
  CHECK(board.waitTerminal("stuck", in(30ms)).status().code() == StatusCode::kTimedOut);
  CHECK(board.waitLayer("stuck", 0, in(30ms)).code() == StatusCode::kTimedOut);
  CHECK(Clock::now() - began < 5s);
  churning = false;
  churn.join();
}

TEST_CASE("request board: every arrival is handed out once, to one of the callers waiting",
          "[handoff]") {
  constexpr int kArrivals = 200;
  RequestBoard board;
  std::atomic<int> taken{0};
  std::vector<std::thread> takers;
  std::mutex seenMutex;
  std::vector<std::string> seen;
  for (int t = 0; t < 4; ++t) {
    takers.emplace_back([&] {
      while (true) {
        auto a = board.nextArrival(in(200ms));
        if (!a.isOk()) return;  // none left
        std::lock_guard lock(seenMutex);
        seen.push_back(a->id);
        ++taken;
      }
    });
  }
  for (int i = 0; i < kArrivals; ++i) {
    KvArrival a;
    a.id = "a" + std::to_string(i);
    board.publishArrival(std::move(a));
  }
  for (auto& t : takers) t.join();
  CHECK(taken.load() == kArrivals);
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
}

TEST_CASE(
    "request board: once closed, what is queued is handed out, then the close's status "
    "at once, to waiting callers too",
    "[handoff]") {
  RequestBoard board;
  std::atomic<bool> waiterReturned{false};
  Status waiterGot;
  std::thread waiter([&] {
    auto a = board.nextArrival(in(20s));
    waiterGot = a.status();
    waiterReturned = true;
  });
  std::this_thread::sleep_for(50ms);  // the waiter is (most likely) waiting by now
  CHECK_FALSE(waiterReturned.load());
  KvArrival queued;
  queued.id = "left";
  const auto closedAt = Clock::now();
  board.close(cancelled("the agent is shut down"));
  waiter.join();
  CHECK(waiterGot.code() == StatusCode::kCancelled);
  CHECK(Clock::now() - closedAt < 10s);     // woken by the close, not by its deadline
  board.publishArrival(std::move(queued));  // published late: still handed out
  auto first = board.nextArrival(in(20s));
  REQUIRE(first.isOk());
  CHECK(first->id == "left");
  const auto before = Clock::now();
  auto next = board.nextArrival(in(20s));
  CHECK(next.status().code() == StatusCode::kCancelled);
  CHECK_THAT(next.status().message(), Catch::Contains("shut down"));
  CHECK(Clock::now() - before < 10s);
}
