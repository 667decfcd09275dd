// kvx-test-labels: unit
#include "doctor/ucx_probe.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;
using kvx::doctor::testing::TempTree;

TEST_CASE("CUDA support is the cuda memory type, gdrcopy the gdr_copy component", "[doctor]") {
  UcxFacts facts;
  facts.memoryTypes = {"host"};
  CHECK_FALSE(facts.supportsCuda());
  facts.memoryTypes = {"host", "cuda", "cuda-managed"};
  CHECK(facts.supportsCuda());
  CHECK_FALSE(facts.hasGdrCopy());
  facts.components = {"cuda_cpy", "gdr_copy"};
  CHECK(facts.hasGdrCopy());
}

TEST_CASE("a fixture root with kvx-doctor-ucx.json gets the fixture probe", "[doctor]") {
  auto probe = makeUcxProbeFor(fixtureRoot("dgx-h100"));
  auto facts = probe->probe();
  REQUIRE(facts.isOk());
  CHECK(facts->version == "1.16.0");
  CHECK_THAT(facts->source, Catch::EndsWith("kvx-doctor-ucx.json"));
}

TEST_CASE("a root without it gets the loaded library", "[doctor]") {
  TempTree empty;
  auto facts = makeUcxProbeFor(SystemRoot(empty.path()))->probe();
  REQUIRE(facts.isOk());
  CHECK(facts->source == "the loaded UCX library");
}
