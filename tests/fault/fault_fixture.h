#pragma once

// Shared by the fault tests: real `kvx agent --role decode --verify` processes (stderr to a
// log file, so that the test can see which arrivals were verified), an in-process prefill
// KvAgent writing the content those agents verify (daemon/kv_content.h), and the process's own
// file descriptors and resident memory. Every wait has a deadline.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/kv_content.h"
#include "kvx/kv_agent.h"
#include "process/agent_protocol.h"
#include "process/child_process.h"
#include "tests/support/failed_assertions.h"
#include "tests/support/kvx_binary.h"
#include "workload/trace_record.h"

namespace kvx::test::fault {

using namespace std::chrono_literals;
using kvx::process::ChildProcess;

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
  // One per call: a test case kept for its failure must not be removed by a later case of
  // the same process that passed.
  static std::atomic<unsigned> made{0};
  const std::string dir =
      "/tmp/kvx_fault_" + std::to_string(::getpid()) + "_" + std::to_string(made.fetch_add(1));
  std::filesystem::create_directories(dir);
  return dir;
}

// scratchDir() for one test's logs: removed when the test ends without a failed assertion,
// kept (and named on stdout) when any failed, CHECKs included, so that the logs of a failed
// run can be read afterwards; kept always with KVX_KEEP_FAULT_LOGS=1.
class ScratchDir {
 public:
  ScratchDir() : path_(scratchDir()), failuresBefore_(failedAssertions()) {}
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    const bool keep = std::getenv("KVX_KEEP_FAULT_LOGS") != nullptr;
    if (!keep && failedAssertions() == failuresBefore_ && std::uncaught_exceptions() == 0) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    } else {
      std::printf("kvx fault test: %s; its logs are kept in %s\n",
                  keep ? "KVX_KEEP_FAULT_LOGS is set" : "the test failed", path_.c_str());
      std::fflush(stdout);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::size_t failuresBefore_;
};

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The STATS line that a `kvx agent` process told to stop prints, within 30 s each line;
// the process is left to exit.
inline nlohmann::json readStats(ChildProcess& process) {
  auto stats = kvx::process::readStats(process, kvx::deadlineIn(30s));
  REQUIRE(stats.isOk());
  return nlohmann::json::parse(*stats);
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
    return awaitStats();
  }

  // The STATS line of an agent already told to stop, and its exit, within 30 s.
  nlohmann::json awaitStats() {
    INFO("decode agent '" << name << "' log: " << log);
    nlohmann::json stats = readStats(*process);
    CHECK(process->waitExit(30s) == 0);
    return stats;
  }
};

// `model`: kModel, or a model name or JSON for a test that needs bigger blocks; `extra`:
// more `kvx agent` options.
// `verify`: off for a prefill agent that writes no content (--no-fill).
inline DecodeProcess startDecode(const std::string& name, const std::string& transport,
                                 std::uint64_t blocks, const std::string& log,
                                 const std::string& model = kModel,
                                 const std::vector<std::string>& extra = {}, bool verify = true) {
  // exec keeps the pid: signals reach the agent itself.
  const std::string script = "exec \"$0\" \"$@\" 2>" + log;
  std::vector<std::string> args{
      "-c",          script,   kvxBinary(),   "agent",    "--role",
      "decode",      "--name", name,          "--blocks", std::to_string(blocks),
      "--model",     model,    "--transport", transport,  "--check-free-blocks",
      "--log-level", "debug"};
  if (verify) args.push_back("--verify");
  args.insert(args.end(), extra.begin(), extra.end());
  auto child = ChildProcess::spawn("/bin/sh", args);
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

// How many times `text` appears in the decode agent's log.
inline std::size_t countInLog(const DecodeProcess& decode, const std::string& text) {
  const std::string log = decode.logText();
  std::size_t count = 0;
  for (std::size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) {
    ++count;
  }
  return count;
}

// Waits until `text` appears `count` times in the decode agent's log, or `timeout` passes.
inline bool waitForLogCount(const DecodeProcess& decode, const std::string& text, std::size_t count,
                            std::chrono::milliseconds timeout) {
  const Deadline deadline = deadlineIn(timeout);
  while (Clock::now() < deadline) {
    if (countInLog(decode, text) >= count) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
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
  REQUIRE(selectDataPath(options.agent, transport));
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
  const daemon::KvContent content(
      id, tokens, {},
      daemon::geometryOf(prefill.pool(), workload::kPrefixChunkTokens, 0, kKvHeads, kKvHeads));
  REQUIRE(content.fillAll(daemon::segmentsOf(prefill), *blocks).isOk());
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

// Waits until decode agent `peer`, as the prefill agent last heard, has every block free:
// it released (and so, with --verify, checked) every request it received. False at the
// deadline.
inline bool waitPeerIdle(KvAgent& prefill, const std::string& peer, Deadline deadline) {
  while (Clock::now() < deadline) {
    for (const KvPeerStatus& p : prefill.peers()) {
      if (p.name == peer && p.totalBlocks > 0 && p.freeBlocks == p.totalBlocks) return true;
    }
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

// A steady stream of whole requests from `prefill` to decode agent `destination`: up to
// `window` in flight, each of a random size in [1, maxBlocks] blocks, ids "<prefix>-<n>".
// Every request is meant to complete; one that does not is recorded with its status, for the
// test to report. Main thread only (it uses Catch2 assertions).
class RequestStream {
 public:
  RequestStream(KvAgent& prefill, std::string destination, std::string prefix, std::size_t window,
                std::uint64_t maxBlocks, std::uint32_t seed)
      : prefill_(prefill),
        destination_(std::move(destination)),
        prefix_(std::move(prefix)),
        window_(window),
        maxBlocks_(maxBlocks),
        random_(seed) {}

  // Retires the requests that ended, then submits until `window` are in flight. Does not
  // wait beyond a short poll.
  void pump() {
    retire();
    while (inFlight_.size() < window_) {
      const std::string id = prefix_ + "-" + std::to_string(submitted_++);
      const std::uint64_t blocks = 1 + random_() % maxBlocks_;
      REQUIRE(
          prefill_.submit(makeRequest(prefill_, id, blocks * kTokensPerBlock, destination_, false))
              .isOk());
      inFlight_.push_back(id);
    }
    std::this_thread::sleep_for(1ms);
  }

  // Submits no more and waits until every request in flight ended; false at `deadline`.
  bool drain(Deadline deadline) {
    while (!inFlight_.empty() && Clock::now() < deadline) {
      retire();
      std::this_thread::sleep_for(1ms);
    }
    return inFlight_.empty();
  }

  const std::vector<std::string>& completed() const { return completed_; }
  std::uint64_t completedBlocks() const { return completedBlocks_; }
  // "id: STATUS message" for each request that failed.
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  void retire() {
    for (auto it = inFlight_.begin(); it != inFlight_.end();) {
      auto status = prefill_.status(*it);
      if (!status.isOk()) FAIL(*it << ": " << status.status().toString());
      if (!isTerminal(status->state)) {
        ++it;
        continue;
      }
      if (status->state == KvRequestState::kReleased) {
        completed_.push_back(*it);
        completedBlocks_ += status->blocks;
      } else {
        failures_.push_back(*it + ": " + status->status.toString());
      }
      it = inFlight_.erase(it);
    }
  }

  KvAgent& prefill_;
  const std::string destination_;
  const std::string prefix_;
  const std::size_t window_;
  const std::uint64_t maxBlocks_;
  std::mt19937 random_;
  std::uint64_t submitted_ = 0;
  std::deque<std::string> inFlight_;
  std::vector<std::string> completed_;
  std::uint64_t completedBlocks_ = 0;
  std::vector<std::string> failures_;
};

// True while process `pid` runs (exists and is not a zombie).
inline bool processRunning(pid_t pid) {
  const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
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
