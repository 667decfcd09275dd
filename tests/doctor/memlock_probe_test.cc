// kvx-test-labels: unit serial
#include "doctor/memlock_probe.h"

#include <sys/resource.h>

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;
using kvx::doctor::testing::TempTree;

TEST_CASE("unlimited from a fixture's /proc/self/limits", "[doctor]") {
  const MemlockLimit limit = probeMemlock(fixtureRoot("dgx-h100"));
  CHECK(limit.known);
  CHECK(limit.unlimited);
  CHECK(limit.allows(std::uint64_t{1} << 40));
  CHECK_THAT(limit.source, Catch::EndsWith("proc/self/limits"));
}

TEST_CASE("a low limit does not hold the pool", "[doctor]") {
  const MemlockLimit limit = probeMemlock(fixtureRoot("memlock-low"));
  CHECK(limit.known);
  CHECK_FALSE(limit.unlimited);
  CHECK(limit.bytes == 65536);
  CHECK(limit.allows(65536));
  CHECK_FALSE(limit.allows(65537));
}

TEST_CASE("an unreadable limit is unknown and blocks nothing", "[doctor]") {
  TempTree tree;
  tree.write("/proc/self/limits", "Max locked memory         lots   lots   bytes\n");
  const MemlockLimit garbled = probeMemlock(SystemRoot(tree.path()));
  CHECK_FALSE(garbled.known);
  TempTree empty;
  const MemlockLimit missing = probeMemlock(SystemRoot(empty.path()));
  CHECK_FALSE(missing.known);
  CHECK(missing.allows(std::uint64_t{1} << 40));
}

TEST_CASE("the real root asks getrlimit", "[doctor]") {
  rlimit expected{};
  REQUIRE(::getrlimit(RLIMIT_MEMLOCK, &expected) == 0);
  const MemlockLimit limit = probeMemlock(SystemRoot("/"));
  CHECK(limit.source == "getrlimit(RLIMIT_MEMLOCK)");
  CHECK(limit.known);
  CHECK(limit.unlimited == (expected.rlim_cur == RLIM_INFINITY));
  if (!limit.unlimited) CHECK(limit.bytes == expected.rlim_cur);
}
