// kvx-test-labels: unit serial
#include "doctor/pci_device.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;
using kvx::doctor::testing::TempTree;

TEST_CASE("a GPU's PCI function: ids, NUMA node, BARs, IOMMU group and its way up", "[doctor]") {
  const SystemRoot root = fixtureRoot("dgx-h100");
  auto gpu = readPciDevice(root, "0000:18:00.0");
  REQUIRE(gpu.isOk());
  CHECK(gpu->vendor == 0x10de);
  CHECK(gpu->deviceId == 0x2330);
  CHECK(gpu->classCode == 0x030200);
  CHECK(gpu->numaNode == 0);
  REQUIRE(gpu->barBytes.size() == 7);
  CHECK(gpu->barBytes[0] == (std::uint64_t{16} << 20));
  CHECK(gpu->barBytes[1] == (std::uint64_t{128} << 30));
  CHECK(gpu->barBytes[2] == 0);
  CHECK(gpu->iommuGroupType == std::optional<std::string>("identity"));
  CHECK(gpu->sysfsPath ==
        "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/"
        "0000:18:00.0");
  REQUIRE(gpu->upstream.size() == 4);
  CHECK(gpu->upstream[0].name == "pci0000:15");
  CHECK(gpu->upstream[0].hostBridge);
  CHECK(gpu->upstream[0].sysfsPath == "/sys/devices/pci0000:15");
  CHECK(gpu->upstream[1].name == "0000:15:01.0");
  CHECK(gpu->upstream[2].name == "0000:16:00.0");
  CHECK(gpu->upstream[3].name == "0000:17:00.0");
  CHECK_FALSE(gpu->upstream[3].hostBridge);
  CHECK(gpu->rootComplex() == "pci0000:15");
}

TEST_CASE("a missing device is NOT_FOUND; bad ids are INVALID_ARGUMENT", "[doctor]") {
  const SystemRoot fixture = fixtureRoot("dgx-h100");
  CHECK(readPciDevice(fixture, "0000:ff:00.0").status().code() == StatusCode::kNotFound);

  TempTree tree;
  tree.write("/sys/devices/pci0000:00/0000:00:01.0/vendor", "nvidia\n");
  tree.write("/sys/devices/pci0000:00/0000:00:01.0/class", "0x030200\n");
  tree.link("/sys/bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
  auto bad = readPciDevice(SystemRoot(tree.path()), "0000:00:01.0");
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("'nvidia'"));
}

TEST_CASE("optional files may be missing", "[doctor]") {
  TempTree tree;
  tree.write("/sys/devices/pci0000:00/0000:00:03.0/vendor", "0x1af4\n");
  tree.write("/sys/devices/pci0000:00/0000:00:03.0/class", "0x020000\n");
  tree.link("/sys/bus/pci/devices/0000:00:03.0", "../../../devices/pci0000:00/0000:00:03.0");
  auto device = readPciDevice(SystemRoot(tree.path()), "0000:00:03.0");
  REQUIRE(device.isOk());
  CHECK(device->numaNode == -1);
  CHECK(device->barBytes.empty());
  CHECK_FALSE(device->iommuGroupType);
  CHECK(device->upstream.size() == 1);
}

TEST_CASE("the PCI address list and ACS control words", "[doctor]") {
  const SystemRoot root = fixtureRoot("acs-redirect");
  const auto addresses = listPciAddresses(root);
  CHECK(std::find(addresses.begin(), addresses.end(), "0000:18:00.0") != addresses.end());
  CHECK(std::is_sorted(addresses.begin(), addresses.end()));
  auto gpu = readPciDevice(root, "0000:18:00.0").value();
  CHECK(readAcsControl(root, gpu.upstream[3]) == std::optional<std::uint16_t>(0x001d));
  CHECK_FALSE(readAcsControl(root, gpu.upstream[2]));  // a switch upstream port has no ACS
}

TEST_CASE("parseHex reads sysfs hex values", "[doctor]") {
  CHECK(parseHex("0x10de\n") == std::optional<std::uint64_t>(0x10de));
  CHECK(parseHex("10DE") == std::optional<std::uint64_t>(0x10de));
  CHECK_FALSE(parseHex("0x"));
  CHECK_FALSE(parseHex("zz"));
  CHECK_FALSE(parseHex(""));
}
