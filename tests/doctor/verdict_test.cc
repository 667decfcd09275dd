// kvx-test-labels: unit serial
#include "doctor/verdict.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureFacts;

namespace {

Verdict verdictFor(const char* fixture) {
  const SystemFacts facts = fixtureFacts(fixture);
  return summarize(facts, judgePairs(facts));
}

}  // namespace

TEST_CASE("DGX-H100-like: usable for the matched pairs, each GPU told its NIC", "[doctor]") {
  const Verdict verdict = verdictFor("dgx-h100");
  CHECK(verdict.usable);
  CHECK(verdict.summary == "GPUDirect RDMA usable for 8 of 64 GPU-NIC pairs");
  REQUIRE(verdict.choices.size() == 8);
  CHECK(verdict.choices[0] == "GPU 0: mlx5_0");
  CHECK(verdict.choices[7] == "GPU 7: mlx5_7");
  REQUIRE(verdict.fixes.size() == 8);  // one "pick mlx5_i" per GPU
  CHECK(verdict.fixes[0].check == "topology");
  CHECK(verdict.fixes[0].pairs == 7);
  CHECK(verdict.fixes[0].fix == "pick mlx5_0 (the NIC closest to GPU 0) or expect lower bandwidth");
}

TEST_CASE("broken fixtures: not usable anywhere, with the fix once", "[doctor]") {
  for (const char* fixture :
       {"peermem-missing", "bar1-small", "iommu-translated", "ucx-no-cuda", "memlock-low",
        "acs-redirect", "port-down", "different-root-complexes", "driver-missing"}) {
    INFO(fixture);
    const Verdict verdict = verdictFor(fixture);
    CHECK_FALSE(verdict.usable);
    CHECK(verdict.summary == "GPUDirect RDMA not usable for any GPU-NIC pair");
    CHECK_THAT(verdict.meaning, Catch::Contains("stages GPU memory through pinned host buffers"));
    CHECK(verdict.choices ==
          std::vector<std::string>{"GPU 0: no NIC (staged through host memory)"});
    CHECK_FALSE(verdict.fixes.empty());
    for (const auto& remedy : verdict.fixes) CHECK(remedy.pairs == 1);
  }
}

TEST_CASE("no GPU, no RDMA device, neither: said plainly, host-memory path", "[doctor]") {
  const Verdict noGpu = verdictFor("no-gpu");
  CHECK_FALSE(noGpu.usable);
  CHECK(noGpu.summary == "no GPU visible");
  CHECK_THAT(noGpu.meaning, Catch::Contains("host memory only"));

  const Verdict noRdma = verdictFor("no-rdma");
  CHECK(noRdma.summary == "no RDMA device");
  CHECK_THAT(noRdma.meaning, Catch::Contains("host-memory path only"));

  const Verdict bare = verdictFor("bare");
  CHECK(bare.summary == "no GPU visible and no RDMA device");
  CHECK_THAT(bare.meaning, Catch::Contains("host memory only"));
  CHECK(bare.choices.empty());
  CHECK(bare.fixes.empty());
}
