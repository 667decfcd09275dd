#pragma once

// Shared by the fault tests: real `kvx agent --role decode --verify` processes (stderr to a
// log file, so that the test can see which arrivals were verified), an in-process prefill
// KvAgent writing the content those agents verify (cli/kv_content.h), and the process's own
// file descriptors and resident memory. Every wait has a deadline.

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/kv_content.h"
#include "examples/pair_transfer/child_process.h"
#include "kvx/kv_agent.h"
#include "tests/support/kvx_binary.h"
#include "workload/trace_record.h"

namespace kvx::test::fault {

using namespace std::chrono_literals;
using pair_transfer::ChildProcess;

// A small model keeps process start and pool population quick: 8 layers of 2 KV heads x 64
// dims, 16 tokens a block = 64 KiB a block.
inline constexpr const char* kModel =
    R"({"name":"fault-test","layers":8,"kvHeads":2,"headDim":64,"dtypeBytes":2,)"
    R"("tokensPerBlock":16,"mla":false})";
inline constexpr std::uint32_t kLayers = 8;
inline constexpr std::uint32_t kKvHeads = 2;
inline constexpr std::uint64_t kTokensPerBlock = 16;

// The bound the issue sets for a failed peer's requests: the peer timeout plus one second.
inline std::chrono::milliseconds failureBound() {
  return AgentOptions{}.peerTimeout + std::chrono::seconds(1);
}

inline std::string scratchDir() {
  const std::string dir = "/tmp/kvx_fault_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A `kvx agent --role decode --verify` process; its stderr (debug log) goes to `log`.
struct DecodeProcess {
  std::unique_ptr<ChildProcess> process;
  std::string name;
  std::string address;
  std::string log;

  pid_t pid() const { return process->pid(); }
  std::string logText() const { return readFile(log); }

  // SIGTERM, then its STATS line (the agent prints it once it stopped), within 30 s.
  nlohmann::json stop() {
    ::kill(pid(), SIGTERM);
    for (;;) {
      auto line = process->readLine(30s);
      INFO("decode agent '" << name << "' log: " << log);
      REQUIRE(line.isOk());
      if (line->rfind("STATS ", 0) == 0) {
        CHECK(process->waitExit(30s) == 0);
        return nlohmann::json::parse(line->substr(6));
      }
    }
  }
};

inline DecodeProcess startDecode(const std::string& name, const std::string& transport,
                                 std::uint64_t blocks, const std::string& log) {
  // exec keeps the pid: signals reach the agent itself.
  const std::string script = "exec \"$0\" \"$@\" 2>" + log;
  auto child = ChildProcess::spawn(
      "/bin/sh", {"-c", script, kvxBinary(), "agent", "--role", "decode", "--name", name,
                  "--blocks", std::to_string(blocks), "--model", kModel, "--transport", transport,
                  "--verify", "--log-level", "debug"});
  REQUIRE(child.isOk());
  DecodeProcess decode{std::make_unique<ChildProcess>(std::move(child).value()), name, "", log};
  auto line = decode.process->readLine(30s);
  INFO("decode agent '" << name << "': " << (line.isOk() ? *line : line.status().toString())
                        << "; log " << log);
  REQUIRE(line.isOk());
  REQUIRE(line->rfind("LISTENING ", 0) == 0);
  decode.address = line->substr(10);
  return decode;
}

// Waits until `text` appears in the decode agent's log, or `timeout` passes.
inline bool waitForLog(const DecodeProcess& decode, const std::string& text,
                       std::chrono::milliseconds timeout) {
  const Deadline deadline = deadlineIn(timeout);
  while (Clock::now() < deadline) {
    if (decode.logText().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

inline KvAgentOptions prefillOptions(const std::string& name, const std::string& transport,
                                     std::uint64_t blocks) {
  KvAgentOptions options;
  options.agent.name = name;
  options.agent.ucxTransports = transport;
  options.role = KvRole::kPrefill;
  options.pool.model = kModel;
  options.pool.blocks = blocks;
  // Far beyond the failure bound: a request that fails must fail because its peer did.
  options.requestTimeout = 60s;
  return options;
}

// Allocates blocks for `tokens` tokens of request `id` on the prefill agent and writes the
// content decode agents verify; the spec is ready to submit.
inline KvRequestSpec makeRequest(KvAgent& prefill, const std::string& id, std::uint64_t tokens,
                                 std::optional<std::string> destination, bool layerwise) {
  auto blocks = prefill.allocateBlocks(prefill.pool().blocksFor(tokens));
  REQUIRE(blocks.isOk());
  const cli::KvContent content(
      id, tokens, {},
      cli::geometryOf(prefill.pool(), workload::kPrefixChunkTokens, 0, kKvHeads, kKvHeads));
  REQUIRE(content.fillAll(cli::segmentsOf(prefill), *blocks).isOk());
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = tokens;
  spec.sourceBlocks = *blocks;
  spec.destination = std::move(destination);
  spec.layerwise = layerwise;
  return spec;
}

// Waits until request `id` is in `state` (or terminal), by `deadline`.
inline KvRequestStatus waitState(KvAgent& prefill, const std::string& id, KvRequestState state,
                                 Deadline deadline) {
  for (;;) {
    auto status = prefill.status(id);
    REQUIRE(status.isOk());
    if (status->state == state || isTerminal(status->state) || Clock::now() >= deadline) {
      return *status;
    }
    std::this_thread::sleep_for(2ms);
  }
}

// Waits until the prefill agent no longer lists `peer`; false at the deadline.
inline bool waitPeerGone(KvAgent& prefill, const std::string& peer, Deadline deadline) {
  while (Clock::now() < deadline) {
    bool listed = false;
    for (const KvPeerStatus& p : prefill.peers()) listed = listed || p.name == peer;
    if (!listed) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// Waits until every block of the prefill pool is free again; false at the deadline.
inline bool waitPoolFree(KvAgent& prefill, Deadline deadline) {
  while (Clock::now() < deadline) {
    const KvPoolUsage usage = prefill.usage();
    if (usage.freeBlocks == usage.totalBlocks) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

inline std::size_t openFileDescriptors() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

// Resident set size, in KiB (VmRSS of /proc/self/status).
inline std::uint64_t residentKib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      std::uint64_t kib = 0;
      in >> kib;
      return kib;
    }
    in.ignore(1 << 16, '\n');
  }
  return 0;
}

}  // namespace kvx::test::fault
