// kvx-test-labels: unit serial
#include "doctor/host_checks.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixtureFacts;

TEST_CASE("iommu: passthrough and off pass, translated fails, unknown says so", "[doctor]") {
  CHECK(checkIommu(fixtureFacts("dgx-h100")).state == CheckState::kOk);
  CHECK(checkIommu(fixtureFacts("bare")).state == CheckState::kOk);
  const CheckResult translated = checkIommu(fixtureFacts("iommu-translated"));
  CHECK(translated.state == CheckState::kFailed);
  CHECK_THAT(translated.found, Catch::StartsWith("translated: "));
  CHECK_THAT(translated.fix, Catch::Contains("iommu=pt"));
  SystemFacts unclear = fixtureFacts("bare");
  unclear.iommu.mode = IommuMode::kUnknown;
  CHECK(checkIommu(unclear).state == CheckState::kUnknown);
}

TEST_CASE("memlock: unlimited, too low, n/a without RDMA, unknown", "[doctor]") {
  CHECK(checkMemlock(fixtureFacts("dgx-h100")).state == CheckState::kOk);
  const CheckResult low = checkMemlock(fixtureFacts("memlock-low"));
  CHECK(low.state == CheckState::kFailed);
  CHECK_THAT(low.found, Catch::StartsWith("64 KiB") && Catch::Contains("below the 2 GiB pool"));
  CHECK_THAT(low.fix,
             Catch::Contains("ulimit -l unlimited") && Catch::Contains("LimitMEMLOCK=infinity"));
  CHECK(checkMemlock(fixtureFacts("memlock-low", 65536)).state == CheckState::kOk);
  const CheckResult bare = checkMemlock(fixtureFacts("bare"));
  CHECK(bare.state == CheckState::kNotApplicable);
  CHECK_THAT(bare.found, Catch::Contains("no RDMA device"));
  SystemFacts unknown = fixtureFacts("dgx-h100");
  unknown.memlock.known = false;
  CHECK(checkMemlock(unknown).state == CheckState::kUnknown);
}

TEST_CASE("ucx: CUDA, no CUDA next to GPUs, no CUDA without GPUs", "[doctor]") {
  const CheckResult cuda = checkUcx(fixtureFacts("dgx-h100"));
  CHECK(cuda.state == CheckState::kOk);
  CHECK(cuda.found == "UCX 1.16.0 moves CUDA memory");
  CHECK(cuda.details[0] == "memory types: host, cuda, cuda-managed");

  const CheckResult host = checkUcx(fixtureFacts("ucx-no-cuda"));
  CHECK(host.state == CheckState::kFailed);
  CHECK_THAT(host.found, Catch::Contains("UCX 1.13.1 cannot move CUDA memory"));
  CHECK_THAT(host.fix, Catch::Contains("--with-cuda") && Catch::Contains("--with-gdrcopy"));

  CHECK(checkUcx(fixtureFacts("bare")).state == CheckState::kNotApplicable);

  // Built with CUDA, but a release whose put/get cannot take it (measured: 1.13.1 on an H100).
  SystemFacts old = fixtureFacts("dgx-h100");
  old.ucx->version = "1.13.1";
  const CheckResult tooOld = checkUcx(old);
  CHECK(tooOld.state == CheckState::kFailed);
  CHECK_THAT(tooOld.found, Catch::StartsWith("UCX 1.13.1 was built with CUDA, but its one-sided "
                                             "put/get cannot take GPU memory before UCX 1.16"));
  CHECK_THAT(tooOld.fix, Catch::Contains("UCX 1.16 or later"));
  old.ucx->version = "1.15.0";
  CHECK(checkUcx(old).state == CheckState::kFailed);
  old.ucx->version = "1.17.0";
  CHECK(checkUcx(old).state == CheckState::kOk);
}

TEST_CASE("ucx: warnings without gdr_copy or an RDMA transport; an error", "[doctor]") {
  SystemFacts noGdr = fixtureFacts("dgx-h100");
  noGdr.ucx->components = {"self", "tcp", "cuda_cpy"};
  const CheckResult gdr = checkUcx(noGdr);
  CHECK(gdr.state == CheckState::kWarning);
  CHECK_THAT(gdr.fix, Catch::Contains("gdrcopy"));

  SystemFacts noVerbs = fixtureFacts("dgx-h100");
  noVerbs.ucx->transports = {"tcp/lo", "cuda_copy/cuda"};
  const CheckResult verbs = checkUcx(noVerbs);
  CHECK(verbs.state == CheckState::kWarning);
  CHECK_THAT(verbs.found, Catch::Contains("no RDMA transport"));

  SystemFacts broken = fixtureFacts("dgx-h100");
  broken.ucx = transportError("ucp_init: Invalid parameter");
  const CheckResult error = checkUcx(broken);
  CHECK(error.state == CheckState::kFailed);
  CHECK_THAT(error.found, Catch::Contains("ucp_init: Invalid parameter"));
}
