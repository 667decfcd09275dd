// kvx-test-labels: unit serial
#include "doctor/system_facts.h"

#include <catch2/catch.hpp>

#include "doctor/hwloc_paths.h"
#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureFacts;

TEST_CASE("every GPU is linked to every NIC, GPU-major", "[doctor]") {
  const SystemFacts facts = fixtureFacts("dgx-h100");
  CHECK(facts.poolBytes == (std::uint64_t{2} << 30));
  REQUIRE(facts.links.size() == 64);
  CHECK(facts.links[9].gpu == 1);
  CHECK(facts.links[9].nic == 1);
  CHECK(facts.links[9].path.kind == PciPathKind::kSameSwitch);
  CHECK(facts.gpuOf(facts.links[9]).pci.address == "0000:38:00.0");
  CHECK(facts.nicOf(facts.links[9]).name == "mlx5_1");
  CHECK_FALSE(facts.verbs);  // only the real root asks libibverbs
  CHECK(facts.ucx.isOk());
  CHECK(facts.peermem.loaded);
  CHECK(facts.iommu.mode == IommuMode::kPassthrough);
  CHECK(facts.memlock.unlimited);
}

TEST_CASE("the ACS words of every bridge on a path are read once", "[doctor]") {
  const SystemFacts facts = fixtureFacts("dgx-h100");
  // 8 root ports, 8 upstream ports, 16 downstream ports.
  CHECK(facts.acsControl.size() == 32);
  const auto port =
      facts.acsControl.find("/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0");
  REQUIRE(port != facts.acsControl.end());
  CHECK(port->second == std::optional<std::uint16_t>(0));
  const auto upstream = facts.acsControl.find("/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0");
  REQUIRE(upstream != facts.acsControl.end());
  CHECK_FALSE(upstream->second);
}

TEST_CASE("hwloc's XML is read when present", "[doctor]") {
  const SystemFacts dgx = fixtureFacts("dgx-h100");
  CHECK(dgx.hwlocXmlPresent);
  if (hwlocBuiltIn()) {
    CHECK(dgx.hwlocStatus.isOk());
    for (const auto& link : dgx.links) CHECK(link.hwlocKind == std::optional(link.path.kind));
  }
  const SystemFacts small = fixtureFacts("bar1-small");
  CHECK_FALSE(small.hwlocXmlPresent);
  CHECK_FALSE(small.links.at(0).hwlocKind);
}

TEST_CASE("no GPU or no NIC: no links", "[doctor]") {
  CHECK(fixtureFacts("no-gpu").links.empty());
  CHECK(fixtureFacts("no-rdma").links.empty());
  CHECK(fixtureFacts("bare").acsControl.empty());
}
