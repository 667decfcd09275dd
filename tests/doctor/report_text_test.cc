// kvx-test-labels: unit serial
#include "doctor/report_text.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixturePath;

namespace {

std::string textFor(const char* fixture) {
  DoctorOptions options;
  options.root = fixturePath(fixture);
  auto report = runDoctor(options);
  REQUIRE(report.isOk());
  return renderText(*report);
}

}  // namespace

TEST_CASE("the text report: checks, pairs, verdict, NICs to use", "[doctor]") {
  const std::string text = textFor("dgx-h100");
  CHECK_THAT(text, Catch::StartsWith("kvx doctor: GPUDirect RDMA on "));
  CHECK_THAT(text, Catch::Contains("(pool 2 GiB)"));
  CHECK_THAT(text, Catch::Contains("[ OK ] GPUs and driver: 8 NVIDIA GPU(s); NVIDIA driver "
                                   "535.129.03\n         GPU 0 (0000:18:00.0)"));
  CHECK_THAT(text, Catch::Contains("\n  GPUDirect RDMA usable between GPU 0 and NIC mlx5_0 (same "
                                   "PCIe switch, via 0000:16:00.0)\n"));
  CHECK_THAT(text, Catch::Contains("\n  GPUDirect RDMA not usable between GPU 0 and NIC mlx5_4 "
                                   "(across sockets): GPU 0 and mlx5_4 are across sockets (NUMA "
                                   "node 0 and 1)\n"));
  CHECK_THAT(text, Catch::Contains("\nVerdict: GPUDirect RDMA usable for 8 of 64 GPU-NIC pairs\n"));
  CHECK_THAT(text, Catch::Contains("  NICs to use for GPUDirect RDMA:\n    GPU 0: mlx5_0\n"));
  CHECK_THAT(text, Catch::Contains("  Fixes:\n    - pick mlx5_0 (the NIC closest to GPU 0) or "
                                   "expect lower bandwidth\n      (topology, 7 pair(s); e.g. "));
}

TEST_CASE("the text report: a failed check shows its fix; each state has its tag", "[doctor]") {
  const std::string text = textFor("peermem-missing");
  CHECK_THAT(text, Catch::Contains("[FAIL] nvidia-peermem: neither nvidia_peermem nor "
                                   "nv_peer_mem is loaded (/proc/modules, /sys/module)\n"
                                   "         fix: modprobe nvidia-peermem"));
  CHECK_THAT(text, Catch::Contains("[ -- ] hwloc cross-check"));
  CHECK_THAT(text, Catch::Contains("nvidia-peermem is not loaded\n"));
  CHECK_THAT(text, Catch::Contains("\nVerdict: GPUDirect RDMA not usable for any GPU-NIC pair\n"));
}

TEST_CASE("the text report on a bare machine says what that means", "[doctor]") {
  const std::string text = textFor("bare");
  CHECK_THAT(text, Catch::Contains("\nGPU-NIC pairs: none\n"));
  CHECK_THAT(text, Catch::EndsWith("\nVerdict: no GPU visible and no RDMA device\n"
                                   "  GPUDirect RDMA does not apply to this machine; kvx moves "
                                   "host memory only: shared memory on this node, TCP between "
                                   "nodes\n"));
}
