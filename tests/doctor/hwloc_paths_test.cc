// kvx-test-labels: unit serial
#include "doctor/hwloc_paths.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixturePath;
using kvx::doctor::testing::TempTree;

TEST_CASE("hwloc's view of the DGX-H100-like node's XML", "[doctor]") {
  const auto xml = fixturePath("dgx-h100") / kHwlocFixtureFile;
  auto kinds = classifyWithHwloc(xml, {{"0000:18:00.0", "0000:19:00.0"},
                                       {"0000:18:00.0", "0000:39:00.0"},
                                       {"0000:18:00.0", "0000:99:00.0"},
                                       {"0000:18:00.0", "0000:aa:00.0"}});
  if (!hwlocBuiltIn()) {
    CHECK(kinds.status().code() == StatusCode::kUnimplemented);
    return;
  }
  REQUIRE(kinds.isOk());
  REQUIRE(kinds->size() == 4);
  CHECK((*kinds)[0] == std::optional(PciPathKind::kSameSwitch));
  CHECK((*kinds)[1] == std::optional(PciPathKind::kDifferentRootComplexes));
  CHECK((*kinds)[2] == std::optional(PciPathKind::kAcrossSockets));
  CHECK_FALSE((*kinds)[3]);
}

TEST_CASE("an XML hwloc cannot load", "[doctor]") {
  TempTree tree;
  tree.write("/bad.xml", "<topology>not really</topology>\n");
  auto kinds = classifyWithHwloc(tree.path() / "bad.xml", {});
  REQUIRE_FALSE(kinds.isOk());
  if (hwlocBuiltIn()) {
    CHECK(kinds.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(kinds.status().message(), Catch::Contains("bad.xml"));
  } else {
    CHECK(kinds.status().code() == StatusCode::kUnimplemented);
  }
}
