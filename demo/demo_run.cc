#include "demo/demo_run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "daemon/prefill_report.h"
#include "demo/agent_environment.h"
#include "demo/demo_report.h"
#include "kvx/transfer.h"
#include "process/agent_protocol.h"
#include "process/child_process.h"

namespace kvx::demo {
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

}  // namespace

int runDemo(const DemoOptions& o, daemon::StopSignal& stop) {
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

}  // namespace kvx::demo
