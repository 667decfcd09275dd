// kvx-test-labels: multiprocess
// `kvx demo --memory cuda` with the strict fake GPU runtime (KVX_GPU_RUNTIME=fake-strict:
// device memory is host memory the CPU cannot touch, a test double that names itself): the demo's agents keep that choice although
// they get no other KVX_* variable, every pool is in "device" memory, every block moves
// through the staging path (UCX) or directly (kvx's socket transport, through host copies)
// and verifies, and the report says which path each peer uses.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/kvx_run.h"

using std::chrono::seconds;

TEST_CASE("kvx demo with GPU pools moves and verifies every block through the staged path",
          "[multiprocess]") {
  ::setenv("KVX_GPU_RUNTIME", "fake-strict", 1);
  // Options meant for another run are not passed on: this one would stop the decode agents.
  ::setenv("KVX_PEERS", "127.0.0.1:1", 1);
  const std::string report = (std::filesystem::temp_directory_path() /
                              ("kvx-demo-gpu-" + std::to_string(::getpid()) + ".json"))
                                 .string();
  auto [code, output] =
      kvx::test::runKvx({"demo", "--requests", "6", "--min-tokens", "64", "--max-tokens", "300",
                         "--decode-blocks", "128", "--prefill-blocks", "128", "--memory", "cuda",
                         "--gpu-path", "staged", "--json", report},
                        seconds(240));
  ::unsetenv("KVX_PEERS");
  INFO(output);
  CHECK(code == 0);
  CHECK_THAT(output, Catch::Contains("CUDA device 0 memory (GPU path staged)"));
  CHECK_THAT(output, Catch::Contains("staged"));

  std::ifstream file(report);
  REQUIRE(file);
  const nlohmann::json json = nlohmann::json::parse(file);
  std::filesystem::remove(report);
  CHECK(json["requests"]["ok"] == 6);
  CHECK(json["requests"]["failed"] == 0);
  INFO(json.dump(2));
  const std::string dump = json.dump();
  CHECK_THAT(dump, Catch::Contains("test double"));
}

TEST_CASE("kvx demo with GPU pools takes the direct path over the socket transport, every block "
          "verified",
          "[multiprocess]") {
  // The strict fake runtime's device memory faults on any CPU access: the socket transport
  // reaches it only through the copy engine.
  ::setenv("KVX_GPU_RUNTIME", "fake-strict", 1);
  const std::string report = (std::filesystem::temp_directory_path() /
                              ("kvx-demo-gpu-socket-" + std::to_string(::getpid()) + ".json"))
                                 .string();
  auto [code, output] =
      kvx::test::runKvx({"demo", "--requests", "6", "--min-tokens", "64", "--max-tokens", "300",
                         "--decode-blocks", "128", "--prefill-blocks", "128", "--memory", "cuda",
                         "--gpu-path", "direct", "--transport", "socket", "--json", report},
                        seconds(240));
  INFO(output);
  CHECK(code == 0);
  CHECK_THAT(output, Catch::Contains("CUDA device 0 memory (GPU path direct) over socket"));
  CHECK_THAT(output, Catch::Contains("GPU memory: direct (the transport moves it itself, through "
                                     "host memory"));
  CHECK_THAT(output, Catch::Contains("RESULT: PASS"));
  std::ifstream file(report);
  REQUIRE(file);
  const nlohmann::json json = nlohmann::json::parse(file);
  std::filesystem::remove(report);
  CHECK(json["requests"]["ok"] == 6);
  CHECK(json["requests"]["failed"] == 0);
}

TEST_CASE("kvx demo refuses GPU options for host pools before starting anything",
          "[multiprocess]") {
  auto [code, output] = kvx::test::runKvx({"demo", "--gpu-path", "staged"}, seconds(30));
  CHECK(code == 2);
}
