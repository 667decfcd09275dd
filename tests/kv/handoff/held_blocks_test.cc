// kvx-test-labels: unit serial
// HeldBlocks: a held request's blocks come back only once its timer ran out and each of its
// lost direct writers proved that it stopped (an acknowledged abort of that incarnation, or
// the end of its process).
#include "kv/handoff/held_blocks.h"

#include <catch2/catch.hpp>
#include <memory>

using namespace kvx;
using namespace kvx::kv::handoff;

namespace {

LostWriter writer(const std::string& peer, const std::string& request, std::uint64_t incarnation,
                  std::shared_ptr<bool> ended = nullptr) {
  LostWriter w;
  w.peer = peer;
  w.request = request;
  w.writer.incarnation = incarnation;
  w.writer.writesDirectly = true;
  if (ended) w.writer.processEnded = [ended] { return *ended; };
  return w;
}

std::vector<kv::BlockExtent> extents(std::uint64_t first, std::uint64_t count) {
  return {kv::BlockExtent{first, count}};
}

}  // namespace

TEST_CASE("a timer-only hold ends with its timer") {
  HeldBlocks held;
  const auto now = Clock::now();
  held.hold("a", extents(0, 4), now + std::chrono::milliseconds(100), {});
  CHECK(held.blocks() == 4);
  CHECK(held.takeReleasable(now).empty());
  const auto released = held.takeReleasable(now + std::chrono::milliseconds(100));
  REQUIRE(released.size() == 1);
  CHECK(released[0].id == "a");
  CHECK(held.empty());
}

TEST_CASE("a held writer is asked once per session and freed by its acknowledgement") {
  HeldBlocks held;
  const auto now = Clock::now();
  held.hold("a", extents(0, 4), now, {writer("p", "a", 7), writer("q", "a-slice", 3)});
  CHECK(held.takeReleasable(now).empty());
  CHECK(held.rejoined("p", 8).empty());         // another incarnation is not the writer
  CHECK_FALSE(held.acknowledged("p", "a", 0));  // not asked yet: an old answer proves nothing
  CHECK(held.rejoined("p", 7) == std::vector<HeldAbort>{{"a", 0}});
  CHECK(held.rejoined("p", 7).empty());  // asked already in this session
  held.lost("p");
  CHECK(held.rejoined("p", 7) == std::vector<HeldAbort>{{"a", 0}});  // the next session asks again
  CHECK(held.acknowledged("p", "a", 0));
  CHECK(held.takeReleasable(now).empty());  // q has not answered
  CHECK(held.rejoined("q", 3) == std::vector<HeldAbort>{{"a-slice", 0}});
  CHECK(held.acknowledged("q", "a-slice", 0));
  CHECK(held.takeReleasable(now).size() == 1);
  CHECK(held.blocks() == 0);
}

TEST_CASE("a held writer that places the same id again is done with the earlier request") {
  HeldBlocks held;
  const auto now = Clock::now();
  held.hold("a", extents(0, 2), now, {writer("p", "a", 7)});
  CHECK_FALSE(held.superseded("p", "a", 8));  // another incarnation proves nothing
  CHECK_FALSE(held.superseded("p", "b", 7));
  CHECK(held.takeReleasable(now).empty());
  CHECK(held.superseded("p", "a", 7));
  CHECK(held.takeReleasable(now).size() == 1);
}

TEST_CASE("a held writer whose process ended stops holding") {
  HeldBlocks held;
  const auto now = Clock::now();
  auto ended = std::make_shared<bool>(false);
  held.hold("a", extents(2, 3), now, {writer("p", "a", 1, ended)});
  held.hold("b", extents(8, 1), now, {writer("p", "b", 1)});  // cannot be watched
  CHECK(held.takeReleasable(now).empty());
  *ended = true;
  const auto released = held.takeReleasable(now);
  REQUIRE(released.size() == 1);
  CHECK(released[0].id == "a");
  CHECK(held.blocks() == 1);
  // At shutdown everything goes back.
  CHECK(held.takeReleasable(Clock::time_point::max()).size() == 1);
  CHECK(held.empty());
}

TEST_CASE("a held writer is asked about its own submission, and only its answer frees it") {
  HeldBlocks held;
  const auto now = Clock::now();
  LostWriter w = writer("p", "a", 7);
  w.attempt = 41;
  held.hold("a", extents(0, 4), now, {w});
  CHECK(held.rejoined("p", 7) == std::vector<HeldAbort>{{"a", 41}});
  CHECK_FALSE(held.acknowledged("p", "a", 42));  // about a later "a" of the same agent
  CHECK(held.takeReleasable(now).empty());
  CHECK(held.acknowledged("p", "a", 41));
  CHECK(held.takeReleasable(now).size() == 1);
}
