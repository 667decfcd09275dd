// kvx-test-labels: multiprocess
// The `kvx` tool as an operator runs it: an agent's stdout protocol (LISTENING, then STATS on
// SIGTERM) and a small `kvx demo` end to end. The binary is $KVX_CLI, or cli/kvx next to this
// test's build directory.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "examples/pair_transfer/child_process.h"

using pair_transfer::ChildProcess;
using std::chrono::seconds;

namespace {

std::string kvxBinary() {
  if (const char* path = std::getenv("KVX_CLI"); path != nullptr && *path != '\0') return path;
  const auto guess =
      std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "cli" / "kvx";
  if (!std::filesystem::exists(guess)) {
    FAIL("no kvx binary at " << guess.string() << ": build the kvx_cli target or set KVX_CLI");
  }
  return guess.string();
}

ChildProcess start(const std::vector<std::string>& args) {
  auto child = ChildProcess::spawn(kvxBinary(), args);
  REQUIRE(child.isOk());
  return std::move(child).value();
}

}  // namespace

TEST_CASE("an agent prints LISTENING, then STATS on SIGTERM, and exits 0", "[multiprocess]") {
  ChildProcess decode = start({"agent", "--role", "decode", "--name", "d-test", "--blocks", "16",
                               "--verify", "--log-level", "warn"});
  auto listening = decode.readLine(seconds(30));
  REQUIRE(listening.isOk());
  REQUIRE_THAT(*listening, Catch::StartsWith("LISTENING 127.0.0.1:"));
  ::kill(decode.pid(), SIGTERM);
  auto stats = decode.readLine(seconds(30));
  REQUIRE(stats.isOk());
  REQUIRE_THAT(*stats, Catch::StartsWith("STATS {"));
  const auto json = nlohmann::json::parse(stats->substr(6));
  CHECK(json["role"] == "decode");
  CHECK(json["arrivals"] == 0);
  CHECK(json["totalBlocks"] == 16);
  CHECK(json["freeBlocks"] == 16);
  CHECK(decode.waitExit(seconds(30)) == 0);
}

TEST_CASE("kvx demo moves, verifies and reports a small workload", "[multiprocess]") {
  ChildProcess demo = start({"demo", "--requests", "12", "--max-tokens", "1024", "--decode-blocks",
                             "256", "--prefill-blocks", "256", "--prefix-cache-blocks", "64",
                             "--log-level", "error", "--timeout-s", "120"});
  std::string output;
  while (true) {
    auto line = demo.readLine(seconds(180));
    if (!line.isOk()) break;
    output += *line + "\n";
  }
  INFO(output);
  CHECK(demo.waitExit(seconds(30)) == 0);
  CHECK_THAT(output, Catch::Contains("12 ok, 0 failed") && Catch::Contains("0 corrupt") &&
                         Catch::Contains("RESULT: PASS"));
}

TEST_CASE("500 requests: PUSH and PULL, layer-wise on and off, every block verified and returned",
          "[multiprocess]") {
  const std::string report = "/tmp/kvx_demo_500_" + std::to_string(::getpid()) + ".json";
  // Mixed mode alternates PUSH and PULL by request; mixed layer-wise alternates in pairs, so
  // all four combinations occur. The 70B TP8 shape keeps 500 prompts small (40 KiB a token).
  ChildProcess demo = start({"demo",       "--requests",       "500",   "--model",
                             "llama3-70b", "--min-tokens",     "16",    "--max-tokens",
                             "2048",       "--rate",           "400",   "--mode",
                             "mixed",      "--layerwise",      "mixed", "--decode-blocks",
                             "1024",       "--prefill-blocks", "1024",  "--prefix-cache-blocks",
                             "256",        "--log-level",      "error", "--timeout-s",
                             "240",        "--json",           report});
  std::string output;
  while (true) {
    auto line = demo.readLine(seconds(300));
    if (!line.isOk()) break;
    output += *line + "\n";
  }
  INFO(output);
  REQUIRE(demo.waitExit(seconds(30)) == 0);
  std::ifstream in(report);
  REQUIRE(in.good());
  const auto json = nlohmann::json::parse(in);
  std::filesystem::remove(report);
  CHECK(json["passed"] == true);
  CHECK(json["requests"]["ok"] == 500);
  CHECK(json["requests"]["failed"] == 0);
  REQUIRE(json["decodes"].size() == 2);
  std::uint64_t arrivals = 0, verified = 0, blocks = 0;
  for (const auto& decode : json["decodes"]) {
    const auto& stats = decode["stats"];
    CHECK(stats["corruptBlocks"] == 0);
    CHECK(stats["freeBlocks"] == stats["totalBlocks"]);
    arrivals += stats["arrivals"].get<std::uint64_t>();
    verified += stats["blocksVerified"].get<std::uint64_t>();
    blocks += stats["blocks"].get<std::uint64_t>();
  }
  CHECK(arrivals == 500);
  CHECK(verified == blocks);
  CHECK(json["blocks"].get<std::uint64_t>() == blocks);
  CHECK(json["prefillPool"]["freeBlocks"] == json["prefillPool"]["totalBlocks"]);
}
