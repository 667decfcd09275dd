// kvx-test-labels: multiprocess
// `kvx demo --memory cuda` with the strict fake GPU runtime (KVX_GPU_RUNTIME=fake-strict:
// device memory is host memory the CPU cannot touch, a test double that names itself): the demo's
// agents keep that choice although they get no other KVX_* variable, every pool is in "device"
// memory, every block moves through the staging path (UCX) or directly (kvx's socket transport,
// through host copies) and verifies, and the report says which path each peer uses.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/kvx_run.h"

using std::chrono::seconds;

namespace {

struct DemoRun {
  int code = 0;
  std::string output;
  nlohmann::json report;
};

// `kvx demo` of 6 small requests with GPU pools on the strict fake runtime (its device memory
// faults on any CPU access), plus `extra` options; its JSON report read back.
DemoRun runGpuDemo(const std::vector<std::string>& extra) {
  ::setenv("KVX_GPU_RUNTIME", "fake-strict", 1);
  // Options meant for another run are not passed on: this one would stop the decode agents.
  ::setenv("KVX_PEERS", "127.0.0.1:1", 1);
  const std::string report = (std::filesystem::temp_directory_path() /
                              ("kvx-demo-gpu-" + std::to_string(::getpid()) + ".json"))
                                 .string();
  std::vector<std::string> args = {"demo", "--requests",       "6",   "--min-tokens",
                                   "64",   "--max-tokens",     "300", "--decode-blocks",
                                   "128",  "--prefill-blocks", "128", "--memory",
                                   "cuda", "--json",           report};
  args.insert(args.end(), extra.begin(), extra.end());
  DemoRun run;
  std::tie(run.code, run.output) = kvx::test::runKvx(args, seconds(240));
  ::unsetenv("KVX_PEERS");
  std::ifstream file(report);
  if (file) run.report = nlohmann::json::parse(file);
  std::filesystem::remove(report);
  return run;
}

}  // namespace

TEST_CASE("kvx demo with GPU pools moves and verifies every block through the staged path",
          "[multiprocess]") {
  const DemoRun run = runGpuDemo({"--gpu-path", "staged"});
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK_THAT(run.output, Catch::Contains("CUDA device 0 memory (GPU path staged)"));
  CHECK_THAT(run.output, Catch::Contains("staged"));
  REQUIRE_FALSE(run.report.is_null());
  CHECK(run.report["requests"]["ok"] == 6);
  CHECK(run.report["requests"]["failed"] == 0);
  INFO(run.report.dump(2));
  CHECK_THAT(run.report.dump(), Catch::Contains("test double"));
}

TEST_CASE(
    "kvx demo with GPU pools takes the direct path over the socket transport, every block "
    "verified",
    "[multiprocess]") {
  // The socket transport reaches the fake device memory only through the copy engine.
  const DemoRun run = runGpuDemo({"--gpu-path", "direct", "--transport", "socket"});
  INFO(run.output);
  CHECK(run.code == 0);
  CHECK_THAT(run.output, Catch::Contains("CUDA device 0 memory (GPU path direct) over socket"));
  CHECK_THAT(run.output, Catch::Contains("GPU memory: direct (the transport moves it itself, "
                                         "through host memory"));
  CHECK_THAT(run.output, Catch::Contains("RESULT: PASS"));
  REQUIRE_FALSE(run.report.is_null());
  CHECK(run.report["requests"]["ok"] == 6);
  CHECK(run.report["requests"]["failed"] == 0);
}

TEST_CASE("kvx demo refuses GPU options for host pools before starting anything",
          "[multiprocess]") {
  auto [code, output] = kvx::test::runKvx({"demo", "--gpu-path", "staged"}, seconds(30));
  CHECK(code == 2);
}
