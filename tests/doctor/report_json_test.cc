// kvx-test-labels: unit serial
#include "doctor/report_json.h"

#include <catch2/catch.hpp>

#include "tests/doctor/fixture_tree.h"

using namespace kvx::doctor;
using kvx::doctor::testing::fixturePath;

namespace {

nlohmann::json jsonFor(const char* fixture) {
  DoctorOptions options;
  options.root = fixturePath(fixture);
  auto report = runDoctor(options);
  REQUIRE(report.isOk());
  return renderJson(*report);
}

}  // namespace

TEST_CASE("the JSON report: checks, devices, pairs, verdict", "[doctor]") {
  const nlohmann::json json = jsonFor("dgx-h100");
  CHECK(json["poolBytes"] == 2147483648ull);
  REQUIRE(json["checks"].size() == 10);
  CHECK(json["checks"][0]["id"] == "gpus");
  CHECK(json["checks"][0]["state"] == "ok");
  CHECK(json["checks"][7]["id"] == "hwloc");
  REQUIRE(json["gpus"].size() == 8);
  CHECK(json["gpus"][0]["address"] == "0000:18:00.0");
  CHECK(json["gpus"][0]["memoryBytes"] == 85899345920ull);
  CHECK(json["gpus"][0]["bar1Bytes"] == 137438953472ull);
  REQUIRE(json["nics"].size() == 8);
  CHECK(json["nics"][0]["ports"][0]["state"] == "ACTIVE");
  REQUIRE(json["pairs"].size() == 64);
  const auto& first = json["pairs"][0];
  CHECK(first["usable"] == true);
  CHECK(first["path"] == "same-switch");
  CHECK(first["sentence"] == "GPUDirect RDMA usable between GPU 0 and NIC mlx5_0");
  CHECK(first["reasons"].empty());
  const auto& far = json["pairs"][4];
  CHECK(far["usable"] == false);
  CHECK(far["path"] == "across-sockets");
  CHECK(far["reasons"][0]["check"] == "topology");
  CHECK(far["reasons"][0]["fix"] ==
        "pick mlx5_0 (the NIC closest to GPU 0) or expect lower "
        "bandwidth");
  CHECK(json["verdict"]["usable"] == true);
  CHECK(json["verdict"]["fixes"][0]["pairs"] == 7);
}

TEST_CASE("the JSON report: failed states and the bare machine", "[doctor]") {
  const nlohmann::json ucx = jsonFor("ucx-no-cuda");
  CHECK(ucx["checks"][9]["id"] == "ucx");
  CHECK(ucx["checks"][9]["state"] == "failed");
  CHECK(ucx["pairs"][0]["reasons"][0]["what"] == "UCX 1.13.1 cannot move CUDA memory");

  const nlohmann::json bare = jsonFor("bare");
  CHECK(bare["gpus"].empty());
  CHECK(bare["pairs"].empty());
  CHECK(bare["checks"][0]["state"] == "n/a");
  CHECK(bare["verdict"]["summary"] == "no GPU visible and no RDMA device");
  CHECK(bare["verdict"]["usable"] == false);
}

TEST_CASE("the JSON report: unknown GPU memory is null", "[doctor]") {
  DoctorOptions options;
  options.root = fixturePath("no-rdma");
  auto report = runDoctor(options);
  REQUIRE(report.isOk());
  report->facts.gpus.gpus[0].memoryBytes.reset();
  CHECK(renderJson(*report)["gpus"][0]["memoryBytes"].is_null());
}
