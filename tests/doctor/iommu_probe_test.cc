// kvx-test-labels: unit serial
#include "doctor/iommu_probe.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;
using kvx::doctor::testing::TempTree;

namespace {

IommuInfo probeFixture(const char* name) {
  const SystemRoot root = fixtureRoot(name);
  std::vector<PciDevice> devices;
  for (const char* address : {"0000:18:00.0", "0000:19:00.0"}) {
    auto device = readPciDevice(root, address);
    if (device.isOk()) devices.push_back(std::move(device).value());
  }
  std::vector<const PciDevice*> pointers;
  for (const auto& device : devices) pointers.push_back(&device);
  return probeIommu(root, pointers);
}

IommuInfo probeCmdline(const char* cmdline) {
  TempTree tree;
  tree.write("/sys/class/iommu/dmar0/uevent", "");
  tree.write("/proc/cmdline", cmdline);
  return probeIommu(SystemRoot(tree.path()), {});
}

}  // namespace

TEST_CASE("identity groups are passthrough", "[doctor]") {
  const IommuInfo info = probeFixture("dgx-h100");
  CHECK(info.mode == IommuMode::kPassthrough);
  CHECK_THAT(info.evidence, Catch::Contains("identity"));
  CHECK(info.units == std::vector<std::string>{"dmar0"});
  CHECK(info.cmdlineFlags == std::vector<std::string>{"intel_iommu=on", "iommu=pt"});
}

TEST_CASE("DMA-FQ groups are translated", "[doctor]") {
  const IommuInfo info = probeFixture("iommu-translated");
  CHECK(info.mode == IommuMode::kTranslated);
  CHECK_THAT(info.evidence, Catch::Contains("0000:18:00.0") && Catch::Contains("DMA-FQ"));
}

TEST_CASE("no IOMMU at all is off", "[doctor]") {
  const IommuInfo info = probeFixture("bare");
  CHECK(info.mode == IommuMode::kOff);
  CHECK(info.cmdlineFlags.empty());
}

TEST_CASE("without groups, the kernel command line decides", "[doctor]") {
  CHECK(probeCmdline("ro intel_iommu=on iommu=pt").mode == IommuMode::kPassthrough);
  CHECK(probeCmdline("ro iommu.passthrough=1").mode == IommuMode::kPassthrough);
  CHECK(probeCmdline("ro amd_iommu=on").mode == IommuMode::kTranslated);
  CHECK(probeCmdline("ro intel_iommu=on").mode == IommuMode::kTranslated);
  CHECK(probeCmdline("ro iommu=off").mode == IommuMode::kOff);
  const IommuInfo unknown = probeCmdline("ro quiet");
  CHECK(unknown.mode == IommuMode::kUnknown);
  CHECK_THAT(unknown.evidence, Catch::Contains("neither"));
}

TEST_CASE("a device's own group type wins over the system's mode", "[doctor]") {
  IommuInfo system;
  system.mode = IommuMode::kPassthrough;
  PciDevice device;
  CHECK(deviceIommuMode(device, system) == IommuMode::kPassthrough);
  device.iommuGroupType = "DMA";
  CHECK(deviceIommuMode(device, system) == IommuMode::kTranslated);
  device.iommuGroupType = "something-new";
  CHECK(deviceIommuMode(device, system) == IommuMode::kPassthrough);
  CHECK(toString(IommuMode::kTranslated) == "translated");
}
