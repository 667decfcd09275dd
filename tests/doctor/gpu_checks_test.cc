// kvx-test-labels: unit
#include "doctor/gpu_checks.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixtureFacts;

TEST_CASE("gpus: found and driven, none, or without the driver", "[doctor]") {
  const CheckResult dgx = checkGpus(fixtureFacts("dgx-h100"));
  CHECK(dgx.id == "gpus");
  CHECK(dgx.state == CheckState::kOk);
  CHECK_THAT(dgx.found, Catch::Contains("8 NVIDIA GPU(s)") && Catch::Contains("535.129.03"));
  REQUIRE(dgx.details.size() == 8);
  CHECK_THAT(dgx.details[0], Catch::Contains("GPU 0 (0000:18:00.0) NVIDIA H100 80GB HBM3"));

  const CheckResult none = checkGpus(fixtureFacts("no-gpu"));
  CHECK(none.state == CheckState::kNotApplicable);
  CHECK_THAT(none.found, Catch::StartsWith("no GPU visible"));

  const CheckResult noDriver = checkGpus(fixtureFacts("driver-missing"));
  CHECK(noDriver.state == CheckState::kFailed);
  CHECK_THAT(noDriver.found, Catch::Contains("the NVIDIA driver is not loaded"));
  CHECK_THAT(noDriver.fix, Catch::Contains("modprobe nvidia"));
}

TEST_CASE("gpus: a GPU the driver did not take is a warning", "[doctor]") {
  SystemFacts facts = fixtureFacts("dgx-h100");
  facts.gpus.gpus[3].driverBound = false;
  const CheckResult result = checkGpus(facts);
  CHECK(result.state == CheckState::kWarning);
  CHECK_THAT(result.found, Catch::Contains("1 GPU(s) not bound"));
}

TEST_CASE("peermem: loaded, missing, not needed, unreadable", "[doctor]") {
  CHECK(checkPeermem(fixtureFacts("dgx-h100")).state == CheckState::kOk);
  const CheckResult missing = checkPeermem(fixtureFacts("peermem-missing"));
  CHECK(missing.state == CheckState::kFailed);
  CHECK_THAT(missing.fix, Catch::Contains("modprobe nvidia-peermem"));
  CHECK(checkPeermem(fixtureFacts("bare")).state == CheckState::kNotApplicable);
  SystemFacts unreadable = fixtureFacts("peermem-missing");
  unreadable.peermem.modulesReadable = false;
  CHECK(checkPeermem(unreadable).state == CheckState::kUnknown);
}

TEST_CASE("bar1: big, smaller than the pool, smaller than memory, unknown", "[doctor]") {
  const CheckResult big = checkBar1(fixtureFacts("dgx-h100"));
  CHECK(big.state == CheckState::kOk);
  CHECK(big.details.size() == 8);

  const CheckResult small = checkBar1(fixtureFacts("bar1-small"));
  CHECK(small.state == CheckState::kFailed);
  CHECK_THAT(small.found, Catch::Contains("smaller than the 2 GiB pool"));
  CHECK_THAT(small.details[0], Catch::Contains("BAR1 256 MiB, memory 80 GiB: failed"));
  CHECK_THAT(small.fix, Catch::Contains("Resizable BAR"));

  // 256 MiB of BAR1 holds a 128 MiB pool, but not 80 GiB of GPU memory.
  const CheckResult partial = checkBar1(fixtureFacts("bar1-small", std::uint64_t{128} << 20));
  CHECK(partial.state == CheckState::kWarning);
  CHECK_THAT(partial.found, Catch::Contains("smaller than their memory"));

  SystemFacts unknown = fixtureFacts("dgx-h100");
  unknown.gpus.gpus[0].bar1Bytes = 0;
  CHECK(checkBar1(unknown).state == CheckState::kUnknown);
  CHECK(bar1State(unknown.gpus.gpus[0], 1) == CheckState::kUnknown);

  CHECK(checkBar1(fixtureFacts("no-gpu")).state == CheckState::kNotApplicable);
}
