// kvx-test-labels: unit serial
#include "doctor/topology_checks.h"

#include <catch2/catch.hpp>

#include "doctor/hwloc_paths.h"
#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixtureFacts;

TEST_CASE("topology: every GPU has a NIC on its switch", "[doctor]") {
  const SystemFacts facts = fixtureFacts("dgx-h100");
  const CheckResult result = checkTopology(facts);
  CHECK(result.state == CheckState::kOk);
  CHECK(result.found ==
        "64 GPU-NIC pairs: 8 behind a shared PCIe switch, 0 through one root complex, 24 across "
        "root complexes, 32 across sockets");
  REQUIRE(result.details.size() == 8);
  CHECK_THAT(result.details[4], Catch::Contains("GPU 4 (0000:98:00.0, NUMA node 1): closest NIC "
                                                "mlx5_4 (0000:99:00.0, NUMA node 1), same PCIe "
                                                "switch (via 0000:96:00.0)"));
  CHECK(closestNic(facts, 4) == std::optional<std::size_t>(4));
}

TEST_CASE("topology: a GPU whose NIC is on another root complex fails", "[doctor]") {
  const CheckResult result = checkTopology(fixtureFacts("different-root-complexes"));
  CHECK(result.state == CheckState::kFailed);
  CHECK_THAT(result.fix, Catch::Contains("move a NIC"));
}

TEST_CASE("topology: only the root complex shared warns; no pairs is n/a", "[doctor]") {
  SystemFacts facts = fixtureFacts("bar1-small");
  facts.links[0].path.kind = PciPathKind::kSameRootComplex;
  CHECK(checkTopology(facts).state == CheckState::kWarning);
  CHECK(checkTopology(fixtureFacts("no-rdma")).state == CheckState::kNotApplicable);
}

TEST_CASE("acs: redirect fails, off passes, unreadable is unknown", "[doctor]") {
  const SystemFacts redirect = fixtureFacts("acs-redirect");
  const CheckResult failed = checkAcs(redirect);
  CHECK(failed.state == CheckState::kFailed);
  CHECK(failed.details.size() == 2);
  CHECK_THAT(failed.details[0], Catch::Contains("ACS control 0x001d, P2P redirect on"));
  CHECK_THAT(failed.fix, Catch::Contains("setpci"));
  CHECK(redirectingBridges(redirect, redirect.links[0]) ==
        "0000:17:00.0 (ACS control 0x001d), 0000:17:01.0 (ACS control 0x001d)");

  const SystemFacts dgx = fixtureFacts("dgx-h100");
  CHECK(checkAcs(dgx).state == CheckState::kOk);
  CHECK(redirectingBridges(dgx, dgx.links[0]).empty());

  SystemFacts unknown = fixtureFacts("dgx-h100");
  for (auto& [path, control] : unknown.acsControl) control.reset();
  const CheckResult result = checkAcs(unknown);
  CHECK(result.state == CheckState::kUnknown);
  CHECK_THAT(result.fix, Catch::Contains("lspci"));

  CHECK(checkAcs(fixtureFacts("no-gpu")).state == CheckState::kNotApplicable);
}

TEST_CASE("hwloc: agreement, disagreement, absent, not built", "[doctor]") {
  CHECK(checkHwloc(fixtureFacts("bar1-small")).state == CheckState::kNotApplicable);
  SystemFacts facts = fixtureFacts("dgx-h100");
  if (hwlocBuiltIn()) {
    const CheckResult agree = checkHwloc(facts);
    CHECK(agree.state == CheckState::kOk);
    CHECK(agree.found == "hwloc agrees with sysfs on 64 of 64 GPU-NIC pairs");

    facts.links[1].hwlocKind = PciPathKind::kSameSwitch;
    facts.links[2].hwlocKind.reset();
    const CheckResult disagree = checkHwloc(facts);
    CHECK(disagree.state == CheckState::kWarning);
    REQUIRE(disagree.details.size() == 2);
    CHECK(disagree.details[0] ==
          "GPU 0 - mlx5_1: sysfs says different root complexes, hwloc says same PCIe switch");
    CHECK(disagree.details[1] == "GPU 0 - mlx5_2: not in the hwloc XML");
  }
  facts.hwlocStatus = unimplemented("kvx was built without hwloc");
  CHECK(checkHwloc(facts).state == CheckState::kUnknown);
  facts.hwlocStatus = invalidArgument("hwloc cannot load x.xml");
  CHECK(checkHwloc(facts).state == CheckState::kWarning);
}
