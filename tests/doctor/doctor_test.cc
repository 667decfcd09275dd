// kvx-test-labels: unit serial
#include "doctor/doctor.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx;
using namespace kvx::doctor;
using kvx::doctor::testing::fixturePath;

namespace {

class FakeUcx final : public UcxProbe {
 public:
  Result<UcxFacts> probe() const override {
    UcxFacts facts;
    facts.version = "9.9.9";
    facts.memoryTypes = {"host", "cuda"};
    facts.components = {"gdr_copy"};
    facts.transports = {"rc_mlx5/mlx5_0:1"};
    facts.source = "fake";
    return facts;
  }
};

DoctorReport run(const char* fixture, std::uint64_t poolBytes = kDefaultPoolBytes) {
  DoctorOptions options;
  options.root = fixturePath(fixture);
  options.poolBytes = poolBytes;
  auto report = runDoctor(options);
  REQUIRE(report.isOk());
  return std::move(report).value();
}

}  // namespace

TEST_CASE("every check runs, in a fixed order", "[doctor]") {
  const DoctorReport report = run("dgx-h100");
  std::vector<std::string> ids;
  for (const auto& check : report.checks) ids.push_back(check.id);
  CHECK(ids == std::vector<std::string>{"gpus", "rdma", "peermem", "bar1", "iommu", "topology",
                                        "acs", "hwloc", "memlock", "ucx"});
  CHECK(report.pairs.size() == 64);
  CHECK(report.verdict.usable);
}

TEST_CASE("each fixture gets its verdict", "[doctor]") {
  CHECK(run("dgx-h100").verdict.summary == "GPUDirect RDMA usable for 8 of 64 GPU-NIC pairs");
  for (const char* fixture :
       {"peermem-missing", "bar1-small", "iommu-translated", "ucx-no-cuda", "memlock-low",
        "acs-redirect", "port-down", "different-root-complexes", "driver-missing"}) {
    INFO(fixture);
    CHECK(run(fixture).verdict.summary == "GPUDirect RDMA not usable for any GPU-NIC pair");
  }
  CHECK(run("no-gpu").verdict.summary == "no GPU visible");
  CHECK(run("no-rdma").verdict.summary == "no RDMA device");
  CHECK(run("bare").verdict.summary == "no GPU visible and no RDMA device");
}

TEST_CASE("the pool size reaches the BAR1 and memlock checks", "[doctor]") {
  CHECK(run("bar1-small", std::uint64_t{128} << 20).verdict.usable);
  CHECK(run("memlock-low", 65536).verdict.usable);
}

TEST_CASE("an injected UCX probe replaces the fixture's", "[doctor]") {
  const FakeUcx fake;
  DoctorOptions options;
  options.root = fixturePath("ucx-no-cuda");
  options.ucx = &fake;
  auto report = runDoctor(options);
  REQUIRE(report.isOk());
  CHECK(report->facts.ucx->version == "9.9.9");
  CHECK(report->verdict.usable);
}

TEST_CASE("a root that is not a directory and a zero pool are refused", "[doctor]") {
  DoctorOptions options;
  options.root = fixturePath("no-such-case");
  auto missing = runDoctor(options);
  REQUIRE_FALSE(missing.isOk());
  CHECK(missing.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(missing.status().message(), Catch::Contains("no-such-case"));

  options.root = fixturePath("bare");
  options.poolBytes = 0;
  CHECK(runDoctor(options).status().code() == StatusCode::kInvalidArgument);
}
