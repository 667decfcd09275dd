// kvx-test-labels: multiprocess
// The `kvx` tool as an operator runs it: an agent's stdout protocol (LISTENING, then STATS on
// SIGTERM), a small `kvx demo` end to end (also with tensor-parallel ranks), and the agents'
// --report files that `kvx bench` reads. The binary is $KVX_CLI, or cli/kvx next to this
// test's build directory.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "process/child_process.h"
#include "tests/support/kvx_binary.h"
#include "tests/support/kvx_child.h"
#include "tests/support/listening_line.h"
#include "tests/support/sanitizer_build.h"

using kvx::process::ChildProcess;
using kvx::test::kvxBinary;
using kvx::test::readListeningAddress;
using kvx::test::spawnKvx;
using std::chrono::seconds;

namespace {

// Under a sanitizer the demos' prompts and pools are a quarter of their size: the same
// paths (as many prompts fit a pool at once, so as many wait for room), a quarter of the
// bytes, whose filling, copying and checking the sanitizers slow most
// (tests/support/sanitizer_build.h). `quartered(n)`: n, or n / 4 there.
const unsigned kDemoScale = kvx::test::smallWorkloads() ? 4 : 1;
std::string quartered(unsigned n) { return std::to_string(n / kDemoScale); }

// The long demo: 500 requests in the plain build, 100 under a sanitizer. Its arrival rate:
// under ThreadSanitizer the agents move about 0.1 GB/s, and at 400/s the later requests would
// wait past the prefill deadline (30 s) for pool room, so they arrive slower there; what the
// case checks (every block verified and returned) is the same.
const int kLongDemoRequests = kvx::test::smallWorkloads() ? 100 : 500;
constexpr const char* kDemoRate = kvx::test::kThreadSanitizer ? "40" : "400";

}  // namespace

TEST_CASE("an agent prints LISTENING, then STATS on SIGTERM, and exits 0", "[multiprocess]") {
  ChildProcess decode = spawnKvx({"agent", "--role", "decode", "--name", "d-test", "--blocks", "16",
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

TEST_CASE("an agent killed with -9 leaves no shared-memory file behind", "[multiprocess]") {
  ChildProcess decode = spawnKvx({"agent", "--role", "decode", "--name", "d-kill", "--blocks", "64",
                                  "--transport", "shm", "--log-level", "warn"});
  readListeningAddress(decode);
  // The /dev/shm files the agent has open: UCX's POSIX segments (its pool may also be System
  // V segments, which the kernel frees with their last user).
  std::vector<std::filesystem::path> files;
  const std::filesystem::path fds = "/proc/" + std::to_string(decode.pid()) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(fds)) {
    std::error_code error;
    std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (error || !target.starts_with("/dev/shm/")) continue;
    if (const auto at = target.find(" (deleted)"); at != std::string::npos) target.resize(at);
    files.emplace_back(target);
  }
  ::kill(decode.pid(), SIGKILL);
  decode.waitExit(seconds(30));
  for (const auto& file : files) {
    INFO(file);
    CHECK_FALSE(std::filesystem::exists(file));
  }
}

TEST_CASE("a prefill agent given a --peer that is no address fails at once", "[multiprocess]") {
  // It was retried for the whole --connect-timeout-ms.
  const auto began = std::chrono::steady_clock::now();
  ChildProcess prefill =
      spawnKvx({"agent", "--role", "prefill", "--name", "p-test", "--blocks", "16", "--no-populate",
                "--peer", "not-an-address", "--synthetic", "--requests", "1",
                "--connect-timeout-ms", "60000", "--log-level", "warn"});
  std::string stats;
  for (int line = 0; line < 3 && stats.empty(); ++line) {
    auto text = prefill.readLine(seconds(30));
    REQUIRE(text.isOk());
    if (text->starts_with("STATS ")) stats = *text;
  }
  CHECK_THAT(stats,
             Catch::Contains("--peer 'not-an-address'") && Catch::Contains("INVALID_ARGUMENT"));
  CHECK(prefill.waitExit(seconds(30)) == 1);
  CHECK(std::chrono::steady_clock::now() - began < seconds(20));
}

TEST_CASE(
    "SIGTERM mid-workload: a prefill agent stops, counts what the stop cut short apart "
    "from failures, and exits 0",
    "[multiprocess]") {
  ChildProcess decode = spawnKvx({"agent", "--role", "decode", "--name", "d-term", "--blocks",
                                  "256", "--no-populate", "--log-level", "warn"});
  const std::string address = readListeningAddress(decode);
  // 200 requests at 20 a second: the stop comes long before the last.
  ChildProcess prefill =
      spawnKvx({"agent", "--role", "prefill", "--name", "p-term", "--blocks", "256",
                "--no-populate", "--peer", address, "--synthetic", "--requests", "200", "--rate",
                "20", "--max-tokens", "1024", "--log-level", "warn"});
  readListeningAddress(prefill);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ::kill(prefill.pid(), SIGTERM);
  auto stats = prefill.readLine(seconds(30));
  REQUIRE(stats.isOk());
  REQUIRE_THAT(*stats, Catch::StartsWith("STATS {"));
  const auto json = nlohmann::json::parse(stats->substr(6));
  CHECK(json["failed"] == 0);
  CHECK(json["stopped"].get<int>() > 0);
  CHECK(json["released"].get<int>() + json["stopped"].get<int>() == 200);
  CHECK(prefill.waitExit(seconds(30)) == 0);
  ::kill(decode.pid(), SIGTERM);
  CHECK(decode.waitExit(seconds(30)) == 0);
}

TEST_CASE("a request that fails is logged once, at warning level, with its reason",
          "[multiprocess]") {
  // The reason was only in the report file (issue 28's operator traps).
  ChildProcess decode = spawnKvx({"agent", "--role", "decode", "--name", "d-fail", "--blocks", "16",
                                  "--no-populate", "--log-level", "warn"});
  const std::string address = readListeningAddress(decode);
  // Every prompt needs 256 blocks of 16 tokens; the prefill pool has 8.
  kvx::process::SpawnOptions options;
  options.captureStderr = true;
  auto prefill =
      ChildProcess::spawn(kvxBinary(),
                          {"agent", "--role", "prefill", "--name", "p-fail", "--blocks", "8",
                           "--no-populate", "--peer", address, "--synthetic", "--requests", "2",
                           "--min-tokens", "4096", "--max-tokens", "4096", "--log-level", "warn"},
                          options);
  REQUIRE(prefill.isOk());
  auto output = prefill->readToEnd(kvx::deadlineIn(std::chrono::seconds(60)));
  REQUIRE(output.isOk());
  INFO(output->err);
  std::size_t warnings = 0;
  for (std::size_t at = output->err.find("[warning] request "); at != std::string::npos;
       at = output->err.find("[warning] request ", at + 1)) {
    ++warnings;
  }
  CHECK(warnings == 2);
  CHECK_THAT(output->err, Catch::Contains("(4096 tokens) failed: RESOURCE_EXHAUSTED") &&
                              Catch::Contains("--blocks"));
  CHECK(prefill->waitExit(seconds(30)) == 1);
  ::kill(decode.pid(), SIGTERM);
  CHECK(decode.waitExit(seconds(30)) == 0);
}

TEST_CASE("UCX's log lines go to stderr: stdout carries LISTENING and STATS only",
          "[multiprocess]") {
  // UCX prints its log to stdout (here: INFO lines at start-up, before LISTENING).
  auto child = ChildProcess::spawn(
      "/usr/bin/env", {"UCX_LOG_LEVEL=info", kvxBinary(), "agent", "--role", "decode", "--name",
                       "d-log", "--blocks", "16", "--no-populate", "--log-level", "warn"});
  REQUIRE(child.isOk());
  auto listening = child->readLine(seconds(30));
  REQUIRE(listening.isOk());
  CHECK_THAT(*listening, Catch::StartsWith("LISTENING 127.0.0.1:"));
  ::kill(child->pid(), SIGTERM);
  auto stats = child->readLine(seconds(30));
  REQUIRE(stats.isOk());
  CHECK_THAT(*stats, Catch::StartsWith("STATS {"));
  CHECK(child->waitExit(seconds(30)) == 0);
}

TEST_CASE("kvx demo moves, verifies and reports a small workload", "[multiprocess]") {
  ChildProcess demo = spawnKvx({"demo", "--requests", "12", "--min-tokens", quartered(128),
                                "--max-tokens", quartered(1024), "--decode-blocks", quartered(256),
                                "--prefill-blocks", quartered(256), "--prefix-cache-blocks",
                                quartered(64), "--log-level", "error", "--timeout-s", "120"});
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

TEST_CASE("a long demo: PUSH and PULL, layer-wise on and off, every block verified and returned",
          "[multiprocess]") {
  const std::string report = "/tmp/kvx_demo_long_" + std::to_string(::getpid()) + ".json";
  // Mixed mode alternates PUSH and PULL by request; mixed layer-wise alternates in pairs, so
  // all four combinations occur. The 70B TP8 shape keeps the prompts small (40 KiB a token).
  ChildProcess demo = spawnKvx({"demo",
                                "--requests",
                                std::to_string(kLongDemoRequests),
                                "--model",
                                "llama3-70b",
                                "--min-tokens",
                                "16",
                                "--max-tokens",
                                quartered(2048),
                                "--rate",
                                kDemoRate,
                                "--mode",
                                "mixed",
                                "--layerwise",
                                "mixed",
                                "--decode-blocks",
                                quartered(1024),
                                "--prefill-blocks",
                                quartered(1024),
                                "--prefix-cache-blocks",
                                quartered(256),
                                "--log-level",
                                "error",
                                "--timeout-s",
                                "240",
                                "--json",
                                report});
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
  CHECK(json["requests"]["ok"] == kLongDemoRequests);
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
  CHECK(arrivals == static_cast<std::uint64_t>(kLongDemoRequests));
  CHECK(verified == blocks);
  CHECK(json["blocks"].get<std::uint64_t>() == blocks);
  CHECK(json["prefillPool"]["freeBlocks"] == json["prefillPool"]["totalBlocks"]);
}

namespace {

// Runs `kvx demo ARGS --json FILE` to its end; returns the JSON report.
nlohmann::json runDemo(std::vector<std::string> args) {
  const std::string report = "/tmp/kvx_demo_tp_" + std::to_string(::getpid()) + ".json";
  args.insert(args.begin(), "demo");
  args.insert(args.end(), {"--json", report});
  ChildProcess demo = spawnKvx(args);
  std::string output;
  while (true) {
    auto line = demo.readLine(seconds(180));
    if (!line.isOk()) break;
    output += *line + "\n";
  }
  INFO(output);
  CHECK(demo.waitExit(seconds(30)) == 0);
  std::ifstream in(report);
  REQUIRE(in.good());
  auto json = nlohmann::json::parse(in);
  std::filesystem::remove(report);
  return json;
}

}  // namespace

TEST_CASE("kvx demo with tensor parallelism: scatters and gathers verify on every rank",
          "[multiprocess]") {
  const auto [prefillTp, decodeTp, layout] =
      GENERATE(std::tuple{2u, 4u, "nhd"}, std::tuple{4u, 2u, "hnd"});
  const std::string mode = GENERATE("push", "pull");
  INFO("prefill TP" << prefillTp << " -> decode TP" << decodeTp << ", " << layout << ", " << mode);
  const auto json = runDemo({"--prefill-tp",
                             std::to_string(prefillTp),
                             "--decode-tp",
                             std::to_string(decodeTp),
                             "--layout",
                             layout,
                             "--mode",
                             mode,
                             "--requests",
                             "6",
                             "--min-tokens",
                             quartered(64),
                             "--max-tokens",
                             quartered(512),
                             "--decode-blocks",
                             quartered(256),
                             "--prefill-blocks",
                             quartered(256),
                             "--prefix-cache-blocks",
                             quartered(64),
                             "--max-outstanding",
                             "4",
                             "--log-level",
                             "error",
                             "--timeout-s",
                             "120"});
  CHECK(json["passed"] == true);
  const auto& tp = json["tensorParallel"];
  CHECK(tp["prompts"] == 6);
  CHECK(tp["completePrompts"] == 6);
  CHECK(tp["ranksVerified"] == decodeTp);
  // Every prompt: a scatter per prefill rank (2 -> 4), or a gather per decode rank (4 -> 2).
  CHECK(tp["scatters"] == (prefillTp < decodeTp ? 6 * prefillTp : 0));
  CHECK(tp["gathers"] == (prefillTp > decodeTp ? 6 * decodeTp : 0));
  CHECK(json["requests"]["ok"] == 6 * std::max(prefillTp, decodeTp));
  REQUIRE(json["decodes"].size() == decodeTp);
  for (const auto& decode : json["decodes"]) {
    CHECK(decode["stats"]["arrivals"] == 6);
    CHECK(decode["stats"]["corruptBlocks"] == 0);
    CHECK(decode["stats"]["blocksVerified"] == decode["stats"]["blocks"]);
    CHECK(decode["stats"]["freeBlocks"] == decode["stats"]["totalBlocks"]);
  }
}

TEST_CASE("agent reports for benchmarks: timing, CPU time, arrivals; random block order",
          "[multiprocess]") {
  const std::string dir = "/tmp/kvx_reports_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ChildProcess decode =
      spawnKvx({"agent", "--role", "decode", "--name", "d-report", "--blocks", "128", "--verify",
                "--log-level", "warn", "--report", dir + "/decode.json"});
  auto listening = decode.readLine(seconds(30));
  REQUIRE(listening.isOk());
  REQUIRE_THAT(*listening, Catch::StartsWith("LISTENING "));
  ChildProcess prefill = spawnKvx({"agent",
                                   "--role",
                                   "prefill",
                                   "--name",
                                   "p-report",
                                   "--blocks",
                                   "128",
                                   "--peer",
                                   listening->substr(10),
                                   "--synthetic",
                                   "--requests",
                                   "5",
                                   "--min-tokens",
                                   "64",
                                   "--max-tokens",
                                   "400",
                                   "--block-order",
                                   "random",
                                   "--mode",
                                   "mixed",
                                   "--log-level",
                                   "warn",
                                   "--report",
                                   dir + "/prefill.json"});
  CHECK(prefill.waitExit(seconds(120)) == 0);
  ::kill(decode.pid(), SIGTERM);
  CHECK(decode.waitExit(seconds(30)) == 0);

  std::ifstream prefillFile(dir + "/prefill.json"), decodeFile(dir + "/decode.json");
  REQUIRE(prefillFile.good());
  REQUIRE(decodeFile.good());
  const auto p = nlohmann::json::parse(prefillFile);
  const auto d = nlohmann::json::parse(decodeFile);
  std::filesystem::remove_all(dir);

  REQUIRE(p["requests"].size() == 5);
  std::map<std::string, std::int64_t> submitNs;
  std::uint64_t blocks = 0;
  for (const auto& r : p["requests"]) {
    CHECK(r["released"] == true);
    CHECK(r["submitNs"].get<std::int64_t>() > 0);
    CHECK(r["doneNs"].get<std::int64_t>() > r["submitNs"].get<std::int64_t>());
    // Shuffled source blocks: nothing coalesces.
    CHECK(r["operations"] == r["descriptors"]);
    CHECK(r["bytes"].get<std::uint64_t>() > 0);
    submitNs[r["destinationId"]] = r["submitNs"].get<std::int64_t>();
    blocks += r["blocks"].get<std::uint64_t>();
  }
  for (const char* key : {"cpuStart", "cpuEnd"}) {
    CHECK(p[key]["userUs"].is_number());
    CHECK(d[key]["sysUs"].is_number());
  }
  CHECK(p["cpuEnd"]["userUs"].get<std::int64_t>() >= p["cpuStart"]["userUs"].get<std::int64_t>());
  CHECK(d["agent"] == "d-report");
  REQUIRE(d["arrivals"].size() == 5);
  for (const auto& a : d["arrivals"]) {
    // One machine, one monotonic clock: a request arrives after it was submitted (and may be
    // taken after the prefill side saw it confirmed).
    REQUIRE(submitNs.contains(a["id"]));
    CHECK(a["arrivedNs"].get<std::int64_t>() > submitNs[a["id"]]);
    CHECK(a["peers"] == nlohmann::json::array({"p-report"}));
    CHECK(a["corruptBlocks"] == 0);
    CHECK(a["verifiedBlocks"] == a["blocks"]);
  }
  CHECK(d["verifiedBlocks"] == blocks);
  CHECK(d["corruptBlocks"] == 0);
}

TEST_CASE("kvx bench refuses an output file it cannot write before it runs a case",
          "[multiprocess]") {
  // It was found only after the whole run.
  const auto began = std::chrono::steady_clock::now();
  for (const std::string option : {"--json", "--csv"}) {
    const std::string command = "timeout 60 " + kvxBinary() + " bench --scenario llama8b " +
                                option + " /nonexistent-dir/out 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    const int status = ::pclose(pipe);
    INFO(output);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK_THAT(output, Catch::Contains(option + " '/nonexistent-dir/out' cannot be written"));
    CHECK_THAT(output, !Catch::Contains("GB/s"));
  }
  CHECK(std::chrono::steady_clock::now() - began < seconds(30));
}

TEST_CASE("SIGUSR1 (give back held blocks) leaves a decode agent running", "[multiprocess]") {
  ChildProcess decode = spawnKvx({"agent", "--role", "decode", "--name", "d-usr1", "--blocks", "16",
                                  "--max-push-blocks-per-peer", "8", "--log-level", "warn"});
  auto listening = decode.readLine(seconds(30));
  REQUIRE(listening.isOk());
  REQUIRE_THAT(*listening, Catch::StartsWith("LISTENING 127.0.0.1:"));
  ::kill(decode.pid(), SIGUSR1);
  // Its default action would end the process: the agent takes it as the operator's word.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int status = 0;
  CHECK(::waitpid(decode.pid(), &status, WNOHANG) == 0);  // still running
  ::kill(decode.pid(), SIGTERM);
  auto stats = decode.readLine(seconds(30));
  REQUIRE(stats.isOk());
  REQUIRE_THAT(*stats, Catch::StartsWith("STATS {"));
  CHECK(nlohmann::json::parse(stats->substr(6))["heldBlocks"] == 0);
  CHECK(decode.waitExit(seconds(30)) == 0);
}
