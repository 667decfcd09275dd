// kvx-test-labels: unit serial
#include "doctor/pair_verdict.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixtureFacts;

namespace {

// The one pair of a small fixture, which must be blocked by `check` alone.
PairVerdict onlyPair(const char* fixture) {
  const auto pairs = judgePairs(fixtureFacts(fixture));
  REQUIRE(pairs.size() == 1);
  return pairs[0];
}

void requireBlockedBy(const PairVerdict& pair, const std::string& check, const char* what,
                      const char* fix) {
  CHECK_FALSE(pair.usable());
  REQUIRE(pair.blockers.size() == 1);
  CHECK(pair.blockers[0].check == check);
  CHECK_THAT(pair.blockers[0].what, Catch::Contains(what));
  CHECK_THAT(pair.blockers[0].fix, Catch::Contains(fix));
  CHECK(pair.sentence() == "GPUDirect RDMA not usable between GPU 0 and NIC mlx5_0");
}

}  // namespace

TEST_CASE("DGX-H100-like: usable for each GPU with its own NIC", "[doctor]") {
  const auto pairs = judgePairs(fixtureFacts("dgx-h100"));
  REQUIRE(pairs.size() == 64);
  for (const auto& pair : pairs) {
    INFO(pair.sentence());
    const bool matched = pair.nic == "mlx5_" + std::to_string(pair.gpu);
    CHECK(pair.usable() == matched);
    CHECK(pair.caveats.empty());
    if (matched) {
      CHECK(pair.path == PciPathKind::kSameSwitch);
      CHECK(pair.sentence() == "GPUDirect RDMA usable between GPU " + std::to_string(pair.gpu) +
                                   " and NIC " + pair.nic);
    }
  }
  CHECK(pairs[0].via == "0000:16:00.0");
  CHECK(pairs[0].gpuAddress == "0000:18:00.0");
  CHECK(pairs[0].nicAddress == "0000:19:00.0");
}

TEST_CASE("DGX-H100-like: far pairs are across root complexes or sockets", "[doctor]") {
  const auto pairs = judgePairs(fixtureFacts("dgx-h100"));
  const PairVerdict& sameSocket = pairs[1];  // GPU 0, mlx5_1
  REQUIRE(sameSocket.blockers.size() == 1);
  CHECK(sameSocket.path == PciPathKind::kDifferentRootComplexes);
  CHECK(sameSocket.blockers[0].what ==
        "GPU 0 and mlx5_1 are on different root complexes (pci0000:15, pci0000:35)");
  CHECK(sameSocket.blockers[0].fix ==
        "pick mlx5_0 (the NIC closest to GPU 0) or expect lower bandwidth");

  const PairVerdict& farSocket = pairs[4 * 8 + 0];  // GPU 4, mlx5_0
  REQUIRE(farSocket.blockers.size() == 1);
  CHECK(farSocket.path == PciPathKind::kAcrossSockets);
  CHECK(farSocket.blockers[0].what == "GPU 4 and mlx5_0 are across sockets (NUMA node 1 and 0)");
  CHECK_THAT(farSocket.blockers[0].fix, Catch::StartsWith("pick mlx5_4"));
}

TEST_CASE("each broken fixture blocks its pair for its one reason", "[doctor]") {
  requireBlockedBy(onlyPair("peermem-missing"), "peermem", "nvidia-peermem is not loaded",
                   "modprobe nvidia-peermem");
  requireBlockedBy(onlyPair("bar1-small"), "bar1",
                   "GPU 0's BAR1 (256 MiB) is smaller than the 2 GiB pool", "Resizable BAR");
  requireBlockedBy(onlyPair("iommu-translated"), "iommu",
                   "the IOMMU translates DMA for 0000:18:00.0 and 0000:19:00.0", "iommu=pt");
  requireBlockedBy(onlyPair("ucx-no-cuda"), "ucx", "UCX 1.13.1 cannot move CUDA memory",
                   "--with-cuda");
  requireBlockedBy(onlyPair("memlock-low"), "memlock",
                   "the locked-memory limit (64 KiB) is below the 2 GiB pool", "ulimit -l");
  requireBlockedBy(onlyPair("acs-redirect"), "acs",
                   "ACS redirects peer-to-peer traffic on "
                   "0000:17:00.0",
                   "disable ACS");
  requireBlockedBy(onlyPair("port-down"), "rdma", "mlx5_0 has no ACTIVE port", "cable");
  requireBlockedBy(onlyPair("different-root-complexes"), "topology",
                   "GPU 0 and mlx5_0 are on different root complexes (pci0000:15, pci0000:35)",
                   "expect lower bandwidth");
}

TEST_CASE("a UCX built with CUDA but older than 1.16 blocks the pair", "[doctor]") {
  SystemFacts facts = fixtureFacts("ucx-no-cuda");
  facts.ucx->memoryTypes = {"host", "cuda", "cuda-managed"};  // built with CUDA, still 1.13.1
  const auto pairs = judgePairs(facts);
  REQUIRE(pairs.size() == 1);
  requireBlockedBy(pairs[0], "ucx", "UCX 1.13.1 cannot put or get CUDA memory (before 1.16)",
                   "UCX 1.16 or later");
}

TEST_CASE("without the driver, peermem is missing too", "[doctor]") {
  const PairVerdict pair = onlyPair("driver-missing");
  REQUIRE(pair.blockers.size() == 2);
  CHECK(pair.blockers[0].what == "the NVIDIA driver is not loaded");
  CHECK(pair.blockers[1].check == "peermem");
}

TEST_CASE("caveats leave a pair usable", "[doctor]") {
  SystemFacts facts = fixtureFacts("bar1-small", std::uint64_t{128} << 20);  // pool fits BAR1
  facts.links[0].path.kind = PciPathKind::kSameRootComplex;
  facts.links[0].path.via = "pci0000:15";
  facts.ucx->components = {"self", "cuda_cpy"};
  facts.iommu.mode = IommuMode::kUnknown;
  facts.gpus.gpus[0].pci.iommuGroupType.reset();
  facts.nics.nics[0].pci->iommuGroupType.reset();
  const auto pairs = judgePairs(facts);
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0].usable());
  std::vector<std::string> checks;
  for (const auto& caveat : pairs[0].caveats) checks.push_back(caveat.check);
  CHECK(checks == std::vector<std::string>{"bar1", "topology", "iommu", "ucx"});
  CHECK(pairs[0].caveats[1].what == "GPU 0 and mlx5_0 share only the root complex pci0000:15");
  CHECK(pairs[0].caveats[2].what == "the IOMMU mode for 0000:18:00.0 and 0000:19:00.0 is unknown");
}

TEST_CASE("no GPU or no NIC: no pair to judge", "[doctor]") {
  CHECK(judgePairs(fixtureFacts("no-gpu")).empty());
  CHECK(judgePairs(fixtureFacts("no-rdma")).empty());
  CHECK(judgePairs(fixtureFacts("bare")).empty());
}
