// kvx-test-labels: unit serial
#include "doctor/peermem_probe.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;
using kvx::doctor::testing::TempTree;

TEST_CASE("nvidia_peermem listed in /proc/modules", "[doctor]") {
  const PeermemState state = probePeermem(fixtureRoot("dgx-h100"));
  CHECK(state.loaded);
  CHECK(state.module == "nvidia_peermem");
  CHECK(state.source == "/proc/modules");
}

TEST_CASE("peermem missing; a module that merely uses it does not count", "[doctor]") {
  const PeermemState state = probePeermem(fixtureRoot("peermem-missing"));
  CHECK_FALSE(state.loaded);
  CHECK(state.modulesReadable);
}

TEST_CASE("nv_peer_mem, and a module seen only under /sys/module", "[doctor]") {
  TempTree legacy;
  legacy.write("/proc/modules", "nv_peer_mem 16384 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n");
  CHECK(probePeermem(kvx::doctor::SystemRoot(legacy.path())).module == "nv_peer_mem");

  TempTree builtin;
  builtin.write("/sys/module/nvidia_peermem/parameters/peerdirect_support", "0\n");
  const PeermemState state = probePeermem(kvx::doctor::SystemRoot(builtin.path()));
  CHECK(state.loaded);
  CHECK(state.source == "/sys/module/nvidia_peermem");
  CHECK_FALSE(state.modulesReadable);
}

TEST_CASE("nothing readable", "[doctor]") {
  TempTree empty;
  const PeermemState state = probePeermem(kvx::doctor::SystemRoot(empty.path()));
  CHECK_FALSE(state.loaded);
  CHECK_FALSE(state.modulesReadable);
}
