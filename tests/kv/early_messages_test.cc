// kvx-test-labels: unit serial
#include "kv/early_messages.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::kv;
using namespace kvx::kv::handoff;

TEST_CASE("messages of a peer that has not joined wait for it, in order") {
  EarlyMessages early;
  const auto now = Clock::now();
  REQUIRE(early.hold("prefill", CapacityMsg{7}, now));
  REQUIRE(early.hold("prefill", DataMsg{"r", 2}, now));
  REQUIRE(early.hold("other", CapacityMsg{1}, now));
  const auto waiting = early.take("prefill");
  REQUIRE(waiting.size() == 2);
  CHECK(std::get<CapacityMsg>(waiting[0]).freeBlocks == 7);
  CHECK(std::get<DataMsg>(waiting[1]).layer == 2);
  CHECK(early.take("prefill").empty());  // handed over once
  CHECK(early.take("other").size() == 1);
}

TEST_CASE("what a peer that never joins sent is bounded and dropped after a while") {
  EarlyMessages early;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < EarlyMessages::kMaxPerPeer; ++i) {
    REQUIRE(early.hold("noisy", CapacityMsg{i}, start));
  }
  CHECK_FALSE(early.hold("noisy", CapacityMsg{0}, start));
  for (std::size_t i = 1; i < EarlyMessages::kMaxPeers; ++i) {
    REQUIRE(early.hold("peer-" + std::to_string(i), CapacityMsg{0}, start));
  }
  CHECK_FALSE(early.hold("one-too-many", CapacityMsg{0}, start));

  CHECK(early.expire(start + EarlyMessages::kHoldFor).empty());  // not yet
  const auto dropped = early.expire(start + EarlyMessages::kHoldFor + std::chrono::seconds(1));
  CHECK(dropped.size() == EarlyMessages::kMaxPeers);
  CHECK(early.take("noisy").empty());
  CHECK(early.hold("one-too-many", CapacityMsg{0}, start));  // room again
}
