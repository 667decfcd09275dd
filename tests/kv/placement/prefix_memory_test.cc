// kvx-test-labels: unit serial
#include "kv/placement/prefix_memory.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

using namespace kvx::kv::placement;
using Hashes = std::vector<std::uint64_t>;

TEST_CASE("leading matches stop at the first unknown id", "[placement]") {
  PrefixMemory m(16);
  m.remember(Hashes{10, 11, 12});
  CHECK(m.size() == 3);
  CHECK(m.leadingMatches(Hashes{10, 11, 12, 13}) == 3);
  CHECK(m.leadingMatches(Hashes{10, 99, 12}) == 1);
  CHECK(m.leadingMatches(Hashes{99, 10, 11}) == 0);
  CHECK(m.leadingMatches(Hashes{}) == 0);
}

TEST_CASE("the least recently remembered ids are evicted, leading ids last", "[placement]") {
  PrefixMemory m(3);
  m.remember(Hashes{1, 2, 3});
  m.remember(Hashes{4});  // evicts 3, the trailing id of the older request
  CHECK(m.size() == 3);
  CHECK_FALSE(m.contains(3));
  CHECK(m.leadingMatches(Hashes{1, 2, 3}) == 2);
  m.remember(Hashes{2});  // refresh: 1 is now the oldest
  m.remember(Hashes{5});
  CHECK_FALSE(m.contains(1));
  CHECK(m.contains(2));
  CHECK(m.contains(4));
  CHECK(m.contains(5));
  m.remember(Hashes{6, 7, 8, 9});  // more than capacity: the leading ones stay
  CHECK(m.leadingMatches(Hashes{6, 7, 8}) == 3);
  CHECK_FALSE(m.contains(9));
}

TEST_CASE("capacity 0 remembers nothing", "[placement]") {
  PrefixMemory m(0);
  m.remember(Hashes{1, 2});
  CHECK(m.size() == 0);
  CHECK(m.leadingMatches(Hashes{1}) == 0);
}
