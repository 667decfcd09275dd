// kvx-test-labels: unit serial
#include "kv/placement/wait_queue.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

using namespace kvx;
using namespace kvx::kv::placement;
using namespace std::chrono_literals;
using Ids = std::vector<std::string>;

namespace {

const Deadline kQueueT0 = Clock::time_point{} + 1000s;

}  // namespace

TEST_CASE("requests leave in arrival order", "[placement]") {
  WaitQueue q;
  CHECK(q.capacity() == 1024);
  for (const char* id : {"c", "a", "b"}) REQUIRE(q.push(id, kQueueT0 + 10s).isOk());
  CHECK(q.ids() == Ids{"c", "a", "b"});
  REQUIRE(q.front() != nullptr);
  CHECK(*q.front() == "c");
  CHECK(q.popFront() == "c");
  CHECK(q.popFront() == "a");
  CHECK(q.ids() == Ids{"b"});
  CHECK(q.size() == 1);
}

TEST_CASE("an empty queue has no front and no deadline", "[placement]") {
  WaitQueue q;
  CHECK(q.empty());
  CHECK(q.front() == nullptr);
  CHECK_FALSE(q.popFront().has_value());
  CHECK_FALSE(q.nextDeadline().has_value());
  CHECK(q.takeExpired(kQueueT0 + 1h).empty());
}

TEST_CASE("a full queue refuses new requests", "[placement]") {
  WaitQueue q(2);
  REQUIRE(q.push("a", kQueueT0).isOk());
  REQUIRE(q.push("b", kQueueT0).isOk());
  Status full = q.push("c", kQueueT0);
  CHECK(full.code() == StatusCode::kResourceExhausted);
  CHECK(full.message().rfind("placement queue full: 2 requests waiting", 0) == 0);
  CHECK(q.size() == 2);
  CHECK_FALSE(q.contains("c"));

  REQUIRE(q.popFront() == "a");
  CHECK(q.push("c", kQueueT0).isOk());
  CHECK(q.ids() == Ids{"b", "c"});
}

TEST_CASE("the default capacity is 1024 requests", "[placement]") {
  WaitQueue q;
  for (int i = 0; i < 1024; ++i) REQUIRE(q.push("r" + std::to_string(i), kQueueT0).isOk());
  Status full = q.push("r1024", kQueueT0);
  CHECK(full.code() == StatusCode::kResourceExhausted);
  CHECK(full.message().rfind("placement queue full: 1024 requests waiting", 0) == 0);
}

TEST_CASE("a queued id cannot be queued twice", "[placement]") {
  WaitQueue q(1);
  REQUIRE(q.push("a", kQueueT0).isOk());
  Status dup = q.push("a", kQueueT0 + 5s);
  CHECK(dup.code() == StatusCode::kAlreadyExists);  // reported before "full"
  CHECK(dup.message().find("request a") != std::string::npos);
  CHECK(q.nextDeadline() == kQueueT0);
}

TEST_CASE("expired requests come out earliest deadline first", "[placement]") {
  WaitQueue q;
  REQUIRE(q.push("a", kQueueT0 + 30s).isOk());
  REQUIRE(q.push("b", kQueueT0 + 10s).isOk());
  REQUIRE(q.push("c", kQueueT0 + 20s).isOk());
  REQUIRE(q.push("d", kQueueT0 + 10s).isOk());
  CHECK(q.nextDeadline() == kQueueT0 + 10s);
  CHECK(q.takeExpired(kQueueT0 + 9s).empty());
  CHECK(q.takeExpired(kQueueT0 + 20s) == Ids{"b", "d", "c"});  // a deadline equal to now expires
  CHECK(q.ids() == Ids{"a"});
  CHECK(q.nextDeadline() == kQueueT0 + 30s);
  CHECK_FALSE(q.contains("b"));
  CHECK(q.push("b", kQueueT0 + 40s).isOk());  // an expired id may come back
  CHECK(q.ids() == Ids{"a", "b"});
}

TEST_CASE("remove takes a request out of the middle", "[placement]") {
  WaitQueue q;
  REQUIRE(q.push("a", kQueueT0 + 30s).isOk());
  REQUIRE(q.push("b", kQueueT0 + 10s).isOk());
  REQUIRE(q.push("c", kQueueT0 + 20s).isOk());
  CHECK(q.remove("b"));
  CHECK_FALSE(q.remove("b"));
  CHECK_FALSE(q.remove("zzz"));
  CHECK(q.ids() == Ids{"a", "c"});
  CHECK(q.nextDeadline() == kQueueT0 + 20s);
  CHECK(q.takeExpired(kQueueT0 + 1h) == Ids{"c", "a"});
  CHECK(q.empty());
}
