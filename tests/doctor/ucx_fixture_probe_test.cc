// kvx-test-labels: unit
#include <catch2/catch.hpp>

#include "doctor/ucx_probe.h"
#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixturePath;
using kvx::doctor::testing::TempTree;

TEST_CASE("the fixture probe reads version, memory types, components, transports", "[doctor]") {
  auto facts = makeUcxFixtureProbe(fixturePath("dgx-h100") / kUcxFixtureFile)->probe();
  REQUIRE(facts.isOk());
  CHECK(facts->version == "1.16.0");
  CHECK(facts->memoryTypes == std::vector<std::string>{"host", "cuda", "cuda-managed"});
  CHECK(facts->supportsCuda());
  CHECK(facts->hasGdrCopy());
  CHECK(std::find(facts->transports.begin(), facts->transports.end(), "rc_mlx5/mlx5_7:1") !=
        facts->transports.end());

  auto host = makeUcxFixtureProbe(fixturePath("ucx-no-cuda") / kUcxFixtureFile)->probe();
  REQUIRE(host.isOk());
  CHECK(host->version == "1.13.1");
  CHECK_FALSE(host->supportsCuda());
}

TEST_CASE("malformed fixtures name the field", "[doctor]") {
  TempTree tree;
  const auto probe = [&](const char* text) {
    tree.write("/ucx.json", text);
    return makeUcxFixtureProbe(tree.path() / "ucx.json")->probe();
  };
  CHECK_THAT(probe("[1]").status().message(), Catch::Contains("not a JSON object"));
  CHECK_THAT(probe("{").status().message(), Catch::Contains("not a JSON object"));
  CHECK_THAT(probe("{\"memoryTypes\": []}").status().message(), Catch::Contains("'version'"));
  CHECK_THAT(probe("{\"version\": \"1\", \"memoryTypes\": \"host\"}").status().message(),
             Catch::Contains("'memoryTypes' must be a list"));
  auto bad = probe("{\"version\": \"1\", \"transports\": [\"tcp/lo\", 3]}");
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("'transports'[1]"));
  auto minimal = probe("{\"version\": \"1.17.0\"}");
  REQUIRE(minimal.isOk());
  CHECK(minimal->memoryTypes.empty());
  CHECK(makeUcxFixtureProbe(tree.path() / "missing.json")->probe().status().code() ==
        StatusCode::kNotFound);
}
