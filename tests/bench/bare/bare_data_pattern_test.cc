// kvx-test-labels: unit serial
// The bare reference's proof that bytes moved: patterns, checksums, expected checksums, and
// the slots requests use.
#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <vector>

#include "bench/bare/data_pattern.h"
#include "bench/bare/slot_sequence.h"

using namespace kvx::bench;

namespace {

constexpr std::uint64_t kSegment = 64;
constexpr std::uint64_t kSlots = 32;
constexpr std::uint64_t kBytes = kSegment * kSlots + 24;  // a tail that no slot covers

std::vector<std::uint64_t> filled(std::uint64_t seed) {
  std::vector<std::uint64_t> words(kBytes / 8);
  fillPattern(reinterpret_cast<std::uint8_t*>(words.data()), kBytes, seed);
  return words;
}

std::uint64_t checksum(const std::vector<std::uint64_t>& words) {
  return bufferChecksum(reinterpret_cast<const std::uint8_t*>(words.data()), kBytes);
}

}  // namespace

TEST_CASE("patterns differ by seed and by position", "[unit]") {
  CHECK(patternWord(1, 0) != patternWord(2, 0));
  CHECK(patternWord(1, 0) != patternWord(1, 1));
  const auto a = filled(kTargetSeed), b = filled(kInitiatorSeed);
  CHECK(a != b);
  CHECK(a[5] == patternWord(kTargetSeed, 5));
  CHECK(checksum(a) != checksum(b));
}

TEST_CASE("the expected checksum matches a buffer whose touched slots were copied", "[unit]") {
  auto target = filled(kTargetSeed);
  const auto source = filled(kInitiatorSeed);
  std::vector<std::uint8_t> touched(kSlots, 0);
  CHECK(checksum(target) == expectedChecksum(kBytes, kSegment, touched, kTargetSeed, 0));

  for (std::uint64_t slot : {0u, 3u, 4u, 31u}) {
    touched[slot] = 1;
    std::memcpy(&target[slot * kSegment / 8], &source[slot * kSegment / 8], kSegment);
  }
  const std::uint64_t want =
      expectedChecksum(kBytes, kSegment, touched, kTargetSeed, kInitiatorSeed);
  CHECK(checksum(target) == want);

  SECTION("a slot that never arrived is caught") {
    touched[7] = 1;
    CHECK(checksum(target) !=
          expectedChecksum(kBytes, kSegment, touched, kTargetSeed, kInitiatorSeed));
  }
  SECTION("one wrong byte is caught") {
    reinterpret_cast<std::uint8_t*>(target.data())[kSegment * 3 + 5] ^= 1;
    CHECK(checksum(target) != want);
  }
  SECTION("two swapped words are caught") {
    std::swap(target[0], target[1]);
    CHECK(checksum(target) != want);
  }
}

TEST_CASE("contiguous slots are adjacent groups that cycle through the buffer", "[unit]") {
  SlotSequence sequence(SlotPattern::kContiguous, 10, 3, 1);
  std::vector<std::uint64_t> slots(3);
  const std::vector<std::vector<std::uint64_t>> want{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 1, 2}};
  for (const auto& expected : want) {
    sequence.next(slots);
    CHECK(slots == expected);
  }
}

TEST_CASE("random slots stay in range, spread, and repeat with the seed", "[unit]") {
  SlotSequence a(SlotPattern::kRandom, 1000, 8, 42), b(SlotPattern::kRandom, 1000, 8, 42);
  SlotSequence c(SlotPattern::kRandom, 1000, 8, 43);
  std::vector<std::uint64_t> sa(8), sb(8), sc(8);
  std::set<std::uint64_t> seen;
  bool differs = false;
  for (int i = 0; i < 200; ++i) {
    a.next(sa);
    b.next(sb);
    c.next(sc);
    CHECK(sa == sb);
    differs = differs || sa != sc;
    for (std::uint64_t s : sa) {
      REQUIRE(s < 1000);
      seen.insert(s);
    }
  }
  CHECK(differs);
  CHECK(seen.size() > 700);  // 1600 draws over 1000 slots cover ~80%
}
