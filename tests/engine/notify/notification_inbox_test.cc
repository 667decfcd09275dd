// kvx-test-labels: unit
// NotificationInbox: oldest first, a bounded wait, and close() waking the waiters.
#include "engine/notify/notification_inbox.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

Notification note(const std::string& text) {
  Notification n;
  n.peer = "p";
  n.payload = text;
  return n;
}

}  // namespace

TEST_CASE("a notification inbox hands notifications over oldest first", "[engine][notify]") {
  NotificationInbox inbox;
  inbox.push(note("one"));
  inbox.push(note("two"));
  CHECK(inbox.waitTake(Clock::now() + 1s).value().payload == "one");
  CHECK(inbox.tryTake()->payload == "two");
  CHECK(inbox.waitTake(Clock::now() + 10ms).status().code() == StatusCode::kTimedOut);
}

TEST_CASE("closing a notification inbox wakes its waiters with CANCELLED", "[engine][notify]") {
  NotificationInbox inbox;
  auto waiter =
      std::async(std::launch::async, [&] { return inbox.waitTake(Clock::now() + 60s).status(); });
  REQUIRE(waiter.wait_for(50ms) == std::future_status::timeout);  // it waits
  const auto closedAt = Clock::now();
  inbox.close();
  REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
  CHECK(Clock::now() - closedAt < 5s);
  const Status woken = waiter.get();
  CHECK(woken.code() == StatusCode::kCancelled);
  CHECK_THAT(woken.message(), Catch::Contains("closing"));
  // What was queued can still be taken; after that a wait returns at once.
  inbox.push(note("late"));
  CHECK(inbox.waitTake(Clock::now() + 60s).value().payload == "late");
  CHECK(inbox.waitTake(Clock::now() + 60s).status().code() == StatusCode::kCancelled);
  inbox.close();  // idempotent
  CHECK(inbox.closed());
}
