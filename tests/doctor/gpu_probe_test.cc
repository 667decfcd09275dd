// kvx-test-labels: unit
#include "doctor/gpu_probe.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureRoot;
using kvx::doctor::testing::TempTree;

TEST_CASE("a DGX-H100-like node: 8 GPUs in PCI order, the driver, BAR1 and memory", "[doctor]") {
  const GpuScan scan = probeGpus(fixtureRoot("dgx-h100"));
  CHECK(scan.driverVersion == std::optional<std::string>("535.129.03"));
  CHECK(scan.problems.empty());
  REQUIRE(scan.gpus.size() == 8);
  for (int i = 0; i < 8; ++i) {
    const GpuInfo& gpu = scan.gpus[i];
    CHECK(gpu.index == i);
    CHECK(gpu.driverBound);
    CHECK(gpu.model == "NVIDIA H100 80GB HBM3");
    CHECK(gpu.bar1Bytes == (std::uint64_t{128} << 30));
    CHECK(gpu.memoryBytes == std::optional<std::uint64_t>(std::uint64_t{80} << 30));
    CHECK(gpu.pci.numaNode == (i < 4 ? 0 : 1));
  }
  CHECK(scan.gpus[0].pci.address == "0000:18:00.0");
  CHECK(scan.gpus[7].pci.address == "0000:f3:00.0");
}

TEST_CASE("a small BAR1 is read from the resource file", "[doctor]") {
  const GpuScan scan = probeGpus(fixtureRoot("bar1-small"));
  REQUIRE(scan.gpus.size() == 1);
  CHECK(scan.gpus[0].bar1Bytes == (std::uint64_t{256} << 20));
}

TEST_CASE("GPUs on PCI without the driver", "[doctor]") {
  const GpuScan scan = probeGpus(fixtureRoot("driver-missing"));
  CHECK_FALSE(scan.driverVersion);
  REQUIRE(scan.gpus.size() == 1);
  CHECK_FALSE(scan.gpus[0].driverBound);
  CHECK(scan.gpus[0].model.empty());
}

TEST_CASE("no GPU: NICs and bridges are not GPUs", "[doctor]") {
  const GpuScan scan = probeGpus(fixtureRoot("no-gpu"));
  CHECK(scan.gpus.empty());
  CHECK(probeGpus(fixtureRoot("bare")).gpus.empty());
}

TEST_CASE("an unreadable NVIDIA function is a problem, other vendors are skipped", "[doctor]") {
  TempTree tree;
  tree.write("/sys/devices/pci0000:00/0000:00:05.0/vendor", "0x10de\n");  // no class file
  tree.link("/sys/bus/pci/devices/0000:00:05.0", "../../../devices/pci0000:00/0000:00:05.0");
  tree.write("/sys/devices/pci0000:00/0000:00:06.0/vendor", "0x8086\n");
  tree.link("/sys/bus/pci/devices/0000:00:06.0", "../../../devices/pci0000:00/0000:00:06.0");
  tree.write("/proc/driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n");
  const GpuScan scan = probeGpus(SystemRoot(tree.path()));
  CHECK(scan.gpus.empty());
  REQUIRE(scan.problems.size() == 1);
  CHECK_THAT(scan.problems[0], Catch::Contains("0000:00:05.0/class"));
  CHECK(scan.driverVersion == std::optional<std::string>("550.54.15"));
}
