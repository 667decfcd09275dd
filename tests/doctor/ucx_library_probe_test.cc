// kvx-test-labels: unit
#include <ucp/api/ucp.h>

#include <catch2/catch.hpp>

#include "doctor/ucx_probe.h"

using namespace kvx::doctor;

TEST_CASE("the loaded UCX: its version, host memory, and some transports", "[doctor]") {
  auto facts = makeUcxLibraryProbe()->probe();
  REQUIRE(facts.isOk());
  CHECK(facts->version == ucp_get_version_string());
  CHECK(facts->memoryTypes.at(0) == "host");
  CHECK(std::find(facts->components.begin(), facts->components.end(), "self") !=
        facts->components.end());
  CHECK(std::find(facts->transports.begin(), facts->transports.end(), "tcp/lo") !=
        facts->transports.end());
  CHECK(facts->source == "the loaded UCX library");
}
