#include "cli/demo_command.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cli/agents_gpu_options.h"
#include "cli/demo_report.h"
#include "daemon/gpu_memory_options.h"
#include "daemon/prefill_report.h"
#include "kvx/transfer.h"
#include "process/agent_protocol.h"
#include "process/child_process.h"

namespace kvx::cli {
namespace {

using kvx::process::ChildProcess;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kStartTimeout = seconds(60);
constexpr auto kStatsTimeout = seconds(20);

// Starts `kvx agent ARGS` and reads its LISTENING line.
Result<std::string> startAgent(const std::vector<std::string>& args,
                               std::optional<ChildProcess>& child) {
  auto spawned = ChildProcess::spawnSelf(args);
  if (!spawned.isOk()) return spawned.status();
  child.emplace(std::move(spawned).value());
  auto address = process::readListeningAddress(*child, deadlineIn(kStartTimeout));
  if (!address.isOk()) return address.status().withContext("waiting for LISTENING");
  return address;
}

// Reads lines until a "STATS {json}" one; null json when there is none by the timeout.
nlohmann::json readStats(ChildProcess& child, milliseconds timeout) {
  auto stats = process::readStats(child, deadlineIn(timeout));
  if (!stats.isOk()) return nullptr;
  auto parsed = nlohmann::json::parse(*stats, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json() : parsed;
}

// Waits for the prefill agents to end their replay; SIGTERMs them on a stop or at the deadline.
// Returns their exit codes.
std::vector<int> awaitPrefills(std::vector<std::optional<ChildProcess>>& prefills,
                               const DemoOptions& o, daemon::StopSignal& stop,
                               std::vector<std::string>& problems) {
  const auto deadline = Clock::now() + seconds(o.timeoutSeconds);
  bool signalled = false;
  std::vector<bool> running(prefills.size());
  for (std::size_t i = 0; i < prefills.size(); ++i) running[i] = prefills[i].has_value();
  const auto poll = milliseconds(200 / std::max<std::size_t>(1, prefills.size()));
  while (std::find(running.begin(), running.end(), true) != running.end()) {
    for (std::size_t i = 0; i < prefills.size(); ++i) {
      if (!running[i]) continue;
      auto line = prefills[i]->readLine(poll);
      if (!line.isOk() && line.status().code() != StatusCode::kTimedOut) running[i] = false;
    }
    if (signalled || !(stop.requested() || Clock::now() >= deadline)) continue;
    problems.push_back(stop.requested() ? "the demo was stopped (" + stop.reason() + ")"
                                        : "the replay did not end within --timeout-s " +
                                              std::to_string(o.timeoutSeconds) + " s");
    for (auto& prefill : prefills) {
      if (prefill) ::kill(prefill->pid(), SIGTERM);
    }
    signalled = true;
  }
  std::vector<int> codes;
  for (auto& prefill : prefills) codes.push_back(prefill ? prefill->waitExit(seconds(30)) : -1);
  return codes;
}

nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return nullptr;
  auto parsed = nlohmann::json::parse(file, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json() : parsed;
}

// The agents take their options from the demo's command line only: a KVX_PEERS or KVX_TRACE
// meant for another run would make a decode agent refuse to start. KVX_GPU_RUNTIME is not an
// option but the choice of the process's GPU runtime (a test double), so it is kept.
void clearAgentEnvironment() {
  std::vector<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (name.rfind("KVX_", 0) == 0 && name != "KVX_GPU_RUNTIME") names.push_back(name);
  }
  for (const std::string& name : names) ::unsetenv(name.c_str());
}

}  // namespace

void addDemoOptions(CLI::App& app, DemoOptions& o) {
  app.description(
      "Runs a prefill agent and two decode agents here and reports on the KV migration.\n"
      "With --prefill-tp/--decode-tp it runs a tensor-parallel prefill instance and decode\n"
      "instance instead, one agent per rank, and each prompt's KV heads are sliced between\n"
      "them (gathers and scatters); every decode rank verifies its heads.\n"
      "The agents are separate `kvx agent` processes on 127.0.0.1; the prefill agent\n"
      "replays a workload, every moved block is verified on arrival, and the report shows\n"
      "requests ok/failed, latency and queueing percentiles, GB/s, descriptors vs operations\n"
      "on the wire, placement decisions, prefix reuse, corrupt blocks, and whether every pool\n"
      "got all its blocks back. Exit code 0 only if all of that is clean.");
  app.footer(
      "\nThe agents get every option from here: KVX_* variables are not passed on to them.\n"
      "\nExamples:\n  kvx demo\n  kvx demo --requests 50 --transport tcp --mode pull\n"
      "  kvx demo --trace conversation_trace.jsonl --requests 100 --time-scale 4\n"
      "  kvx demo --prefill-tp 2 --decode-tp 4\n"
      "  kvx demo --memory cuda --gpu-path staged\n");
  auto* requests =
      app.add_option("--requests", o.requests, "requests (with --trace: the first N of the trace)");
  requests->capture_default_str();
  app.add_option("--seed", o.seed, "synthetic workload seed")->capture_default_str();
  app.add_option("--model", o.model, "model shape (built-in name or JSON file)")
      ->capture_default_str();
  app.add_option("--layout", o.layout, "pool layout")
      ->check(CLI::IsMember({"nhd", "hnd", "blocks-first", "cross-layer"}))
      ->capture_default_str();
  app.add_option("--transport", o.transport, "shm, tcp (UCX) or socket (kvx's own TCP)")
      ->check(CLI::IsMember({"shm", "tcp", "socket"}))
      ->capture_default_str();
  app.add_option("--mode", o.mode, "push, pull or mixed (alternating)")
      ->check(CLI::IsMember({"push", "pull", "mixed"}))
      ->capture_default_str();
  app.add_option("--layerwise", o.layerwise, "on, off or mixed")
      ->check(CLI::IsMember({"on", "off", "mixed"}))
      ->capture_default_str();
  app.add_option("--trace", o.trace, "replay this JSONL trace instead of a synthetic one");
  app.add_option("--time-scale", o.timeScale, "replay speed-up")->capture_default_str();
  app.add_option("--rate", o.rate,
                 "synthetic arrivals per second (-1: 100, or 5 with gathers, --prefill-tp > "
                 "--decode-tp, which stall when the decode pools fill up: see docs/kv.md)")
      ->capture_default_str();
  app.add_option("--min-tokens", o.minTokens, "synthetic: shortest prompt")->capture_default_str();
  app.add_option("--max-tokens", o.maxTokens, "synthetic: longest prompt")->capture_default_str();
  app.add_option("--prefix-share", o.prefixShare, "synthetic: share of prompts with a prefix")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--layer-ms", o.layerMs, "simulated prefill compute per layer")
      ->capture_default_str();
  app.add_option("--max-outstanding", o.maxOutstanding, "requests in flight at most")
      ->capture_default_str();
  app.add_option("--prefill-tp", o.prefillTp,
                 "prefill TP ranks (1, 2, 4, 8 for llama3-8b's 8 KV heads); above 1, or with "
                 "--decode-tp above 1: one agent per rank, sliced requests")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--decode-tp", o.decodeTp, "decode TP ranks (likewise)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--decode-blocks", o.decodeBlocks,
                 "blocks per decode pool (a rank's, with TP); 0: 1024, or 2048 with TP")
      ->capture_default_str();
  app.add_option("--prefill-blocks", o.prefillBlocks,
                 "blocks per prefill pool (a rank's, with TP); 0: 1024, more for scatters "
                 "(each request of a prompt has its own source blocks)")
      ->capture_default_str();
  app.add_option("--prefix-cache-blocks", o.prefixCacheBlocks,
                 "decode: blocks kept for prefix reuse")
      ->capture_default_str();
  app.add_option("--timeout-s", o.timeoutSeconds, "deadline for the replay")->capture_default_str();
  app.add_option("--log-level", o.logLevel, "the agents' stderr log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--json", o.json, "also write the report as JSON to this file");
  addAgentsGpuMemoryOptions(app, o.memory, o.device, o.gpuPath,
                            "where every agent's pool lives: host, or cuda (GPU memory; each "
                            "agent's data path with each peer is in the report)");
}

int runDemoCommand(const DemoOptions& o, daemon::StopSignal& stop) {
  clearAgentEnvironment();
  auto planned = planDemo(o);
  if (!planned.isOk()) {
    std::fprintf(stderr, "kvx demo: %s\n", planned.status().toString().c_str());
    return 2;
  }
  const DemoPlan& plan = *planned;
  if (!o.json.empty()) {
    if (Status s = daemon::prepareOutputFile(o.json, "--json"); !s.isOk()) {
      std::fprintf(stderr, "kvx demo: %s\n", s.message().c_str());
      return 2;
    }
  }
  char dirTemplate[] = "/tmp/kvx-demo-XXXXXX";
  if (::mkdtemp(dirTemplate) == nullptr) {
    std::fprintf(stderr, "kvx demo: cannot create a temporary directory in /tmp\n");
    return 1;
  }
  const std::string dir = dirTemplate;
  DemoInputs inputs;
  inputs.title = plan.title;
  inputs.prefillTp = plan.prefillTp;
  inputs.decodeTp = plan.decodeTp;

  std::vector<std::optional<ChildProcess>> decodes(plan.decodes.size());
  std::vector<std::string> peerArgs;
  for (std::size_t i = 0; i < plan.decodes.size(); ++i) {
    DecodeOutcome outcome;
    outcome.name = plan.decodes[i].name;
    auto address = startAgent(plan.decodes[i].args, decodes[i]);
    if (!address.isOk()) {
      inputs.problems.push_back(outcome.name + " did not start: " + address.status().toString());
    } else {
      outcome.address = *address;
      peerArgs.insert(peerArgs.end(), {"--peer", *address});
      std::fprintf(stderr, "kvx demo: %s listening on %s\n", outcome.name.c_str(),
                   address->c_str());
    }
    inputs.decodes.push_back(std::move(outcome));
  }

  std::vector<std::optional<ChildProcess>> prefills(plan.prefills.size());
  std::vector<std::string> reportPaths;
  for (std::size_t i = 0; i < plan.prefills.size() && inputs.problems.empty(); ++i) {
    const DemoAgent& agent = plan.prefills[i];
    reportPaths.push_back(dir + "/" + agent.name + "-report.json");
    std::vector<std::string> args = agent.args;
    args.insert(args.end(), {"--report", reportPaths.back()});
    args.insert(args.end(), peerArgs.begin(), peerArgs.end());
    auto address = startAgent(args, prefills[i]);
    if (!address.isOk()) {
      inputs.problems.push_back(agent.name + " did not start: " + address.status().toString());
    } else {
      std::fprintf(stderr, "kvx demo: %s listening on %s; replaying...\n", agent.name.c_str(),
                   address->c_str());
    }
  }
  const std::vector<int> exitCodes = awaitPrefills(prefills, o, stop, inputs.problems);

  for (auto& decode : decodes) {
    if (decode) ::kill(decode->pid(), SIGTERM);
  }
  for (std::size_t i = 0; i < decodes.size(); ++i) {
    if (!decodes[i]) continue;
    inputs.decodes[i].stats = readStats(*decodes[i], kStatsTimeout);
    inputs.decodes[i].exitCode = decodes[i]->waitExit(seconds(10));
  }
  for (std::size_t i = 0; i < reportPaths.size(); ++i) {
    inputs.prefills.push_back({plan.prefills[i].name, readJsonFile(reportPaths[i]), exitCodes[i]});
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);

  const DemoReport report(std::move(inputs));
  std::fputs(report.text().c_str(), stdout);
  std::fflush(stdout);
  bool jsonWritten = true;
  if (!o.json.empty()) {
    if (Status s = daemon::writeJsonFile(o.json, report.json()); !s.isOk()) {
      std::fprintf(stderr, "kvx demo: FAIL: --json: %s\n", s.message().c_str());
      jsonWritten = false;
    }
  }
  return report.passed() && jsonWritten ? 0 : 1;
}

}  // namespace kvx::cli
