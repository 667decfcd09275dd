// kvx-test-labels: multiprocess bench-smoke
// `kvx bench --memory cuda` with the strict fake GPU runtime (KVX_GPU_RUNTIME=fake-strict:
// device memory the CPU cannot touch, a test double): the staged path moves and verifies every
// block of a quick llama8b run and of mla (one latent segment per layer; mla alone under a
// sanitizer, where llama8b takes minutes: tests/support/sanitizer_build.h), and the header names
// the path, the fake runtime and the bare reference's host memory; --gpu-path direct, which this
// machine's UCX cannot give, fails at once with the agent's reason, and over kvx's socket
// transport (which copies GPU memory through host memory) runs and verifies; misplaced GPU
// options are usage errors.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/kvx_run.h"
#include "tests/support/sanitizer_build.h"

using std::chrono::seconds;

namespace {

// Runs `kvx ARGS` with the fake GPU runtime; returns its exit code and stdout.
std::pair<int, std::string> run(const std::vector<std::string>& args, seconds timeout) {
  ::setenv("KVX_GPU_RUNTIME", "fake-strict", 1);
  return kvx::test::runKvx(args, timeout);
}

class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("kvx-bench-gpu-test-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace

TEST_CASE("GPU pools on the staged path move and verify, and the header says so", "[bench]") {
  TempDir dir;
  const std::string json = dir.file("bench.json");
  const std::string csv = dir.file("bench.csv");
  auto [code, output] =
      run({"bench", "--scenario", kvx::test::smallWorkloads() ? "mla" : "llama8b,mla", "--quick",
           "--memory", "cuda", "--gpu-path", "staged", "--json", json, "--csv", csv, "--log-level",
           "error"},
          seconds(600));
  INFO(output);
  CHECK(code == 0);
  CHECK_THAT(output, Catch::Contains("Every destination block was verified"));
  CHECK_THAT(output, Catch::Contains("GPU memory: the agents' pools on CUDA device 0, --gpu-path "
                                     "staged; GPU runtime: fake GPU runtime"));
  CHECK_THAT(output, Catch::Contains("GPUDirect: off, staged through host"));
  CHECK_THAT(output, Catch::Contains("bare reference: host memory"));
  CHECK_THAT(output, Catch::Contains("Data path reported by the agents: "));

  std::ifstream file(json);
  const auto report = nlohmann::json::parse(file);
  const auto& header = report["header"];
  CHECK(header["memory"]["kind"] == "cuda");
  CHECK(header["memory"]["gpuPath"] == "staged");
  CHECK_THAT(header["memory"]["gpuRuntime"].get<std::string>(),
             Catch::StartsWith("fake GPU runtime"));
  CHECK_THAT(header["gpuDirect"].get<std::string>(),
             Catch::StartsWith("GPUDirect: off, staged through host"));
  CHECK(header["bareReference"] == "host memory");
  // The fake runtime's copy reference copies 32 MiB (its figures say nothing of a GPU).
  CHECK(header["memory"]["gpuCopyReference"]["bytes"] == 32u << 20);
  CHECK_FALSE(header["dataPaths"].empty());
  REQUIRE_FALSE(report["cases"].empty());
  for (const auto& c : report["cases"]) {
    INFO(c.dump());
    CHECK(c["clean"] == true);
    CHECK(c["memory"] == "cuda:0");
    CHECK(c["gpuPath"] == "staged");
    REQUIRE(c.contains("kvx"));
    CHECK(c["kvx"]["corruptBlocks"] == 0);
    CHECK(c["kvx"]["verifiedBlocks"].get<std::uint64_t>() > 0);
  }
  std::ifstream csvFile(csv);
  std::string columns, row;
  std::getline(csvFile, columns);
  std::getline(csvFile, row);
  CHECK_THAT(columns, Catch::EndsWith(",memory,gpu_path,gpu_runtime,data_path"));
  CHECK_THAT(row, Catch::Contains(",cuda:0,staged,\"fake GPU runtime"));
}

TEST_CASE("--gpu-path direct where UCX cannot move GPU memory fails at once, saying why",
          "[bench]") {
  const auto start = std::chrono::steady_clock::now();
  auto [code, output] = run({"bench", "--scenario", "llama8b", "--quick", "--memory", "cuda",
                             "--gpu-path", "direct", "--log-level", "error"},
                            seconds(120));
  INFO(output);
  CHECK(code == 1);
  CHECK_THAT(output, Catch::Contains("FAILED TO RUN: FAILED_PRECONDITION: agent 'decode-0' could "
                                     "not start: "));
  CHECK_THAT(output, Catch::Contains("GPUDirect: refused (--gpu-path direct): "));
  // The first case's refusal ends the run: no case waits for a timeout.
  CHECK(std::chrono::steady_clock::now() - start < seconds(60));
}

TEST_CASE(
    "--gpu-path direct over the socket transport moves and verifies GPU pools, saying it "
    "is not GPUDirect",
    "[bench]") {
  // The direct path end to end on the strict fake runtime: the agents register their
  // "device" pools with kvx's socket transport, which copies them through host memory.
  TempDir dir;
  const std::string json = dir.file("bench-socket.json");
  auto [code, output] = run({"bench", "--scenario", kvx::test::smallWorkloads() ? "mla" : "llama8b",
                             "--quick", "--memory", "cuda", "--gpu-path", "direct", "--transport",
                             "socket", "--json", json, "--log-level", "error"},
                            seconds(600));
  INFO(output);
  CHECK(code == 0);
  CHECK_THAT(output, Catch::Contains("Every destination block was verified"));
  CHECK_THAT(output, Catch::Contains("GPUDirect: off (socket/tcp "));
  CHECK_THAT(output,
             Catch::Contains("the transport moves CUDA memory itself, through host memory"));
  CHECK_THAT(output, Catch::Contains("bare reference: host memory"));
  std::ifstream file(json);
  const auto report = nlohmann::json::parse(file);
  REQUIRE_FALSE(report["cases"].empty());
  for (const auto& c : report["cases"]) {
    INFO(c.dump());
    CHECK(c["clean"] == true);
    CHECK(c["gpuPath"] == "direct");
    CHECK(c["kvx"]["corruptBlocks"] == 0);
    CHECK(c["kvx"]["verifiedBlocks"].get<std::uint64_t>() > 0);
  }
}

TEST_CASE("GPU options without --memory cuda are usage errors", "[bench]") {
  CHECK(run({"bench", "--scenario", "llama8b", "--quick", "--gpu-path", "staged"}, seconds(30))
            .first == 2);
  CHECK(run({"bench", "--scenario", "llama8b", "--quick", "--device", "1"}, seconds(30)).first ==
        2);
  CHECK(run({"bench", "--scenario", "llama8b", "--quick", "--memory", "gpu"}, seconds(30)).first ==
        2);
}
