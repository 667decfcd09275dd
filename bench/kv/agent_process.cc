#include "bench/kv/agent_process.h"

#include <signal.h>

#include <fstream>

#include "process/agent_protocol.h"

namespace kvx::bench {

using std::chrono::milliseconds;

namespace {

// The agent's reason for not starting, from its STATS line ({"code", "message"}), with its
// code: FAILED_PRECONDITION for a data path it cannot have (--gpu-path direct without a UCX
// that moves GPU memory) must reach the bench as such.
Status startFailure(const std::string& name, const std::string& stats) {
  const auto json = nlohmann::json::parse(stats, nullptr, false);
  const std::string code = json.is_object() ? json.value("code", std::string()) : std::string();
  const std::string message =
      json.is_object() ? json.value("message", std::string()) : std::string(stats);
  StatusCode parsed = StatusCode::kInternal;
  for (auto c = static_cast<std::uint8_t>(StatusCode::kInvalidArgument);
       c <= static_cast<std::uint8_t>(StatusCode::kInternal); ++c) {
    if (toString(static_cast<StatusCode>(c)) == code) parsed = static_cast<StatusCode>(c);
  }
  return Status(parsed, "agent '" + name + "' could not start: " + message);
}

}  // namespace

Result<AgentProcess> AgentProcess::start(const std::string& binary, std::string name,
                                         std::vector<std::string> args, std::string reportPath,
                                         milliseconds timeout) {
  args.insert(args.begin(), "agent");
  args.insert(args.end(), {"--name", name, "--report", reportPath});
  auto spawned = kvx::process::ChildProcess::spawn(binary, args);
  if (!spawned.isOk()) return spawned.status().withContext("starting agent '" + name + "'");
  AgentProcess process(std::move(name), std::move(spawned).value(), std::move(reportPath));
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return timedOut("agent '" + process.name_ + "' did not print LISTENING within " +
                      std::to_string(timeout.count()) + " ms");
    }
    auto line = process.child_->readLine(left);
    if (!line.isOk()) {
      return line.status().withContext("agent '" + process.name_ +
                                       "' exited before listening (see its log above)");
    }
    const process::AgentLine said = process::parseAgentLine(*line);
    if (said.kind == process::AgentLine::Kind::kListening) {
      process.address_ = said.payload;
      return process;
    }
    if (said.kind == process::AgentLine::Kind::kStats)
      return startFailure(process.name_, said.payload);
  }
}

int AgentProcess::awaitExit(Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    auto line = child_->readLine(milliseconds(200));
    if (!line.isOk() && line.status().code() != StatusCode::kTimedOut) break;  // it exited
  }
  if (Clock::now() >= deadline) ::kill(child_->pid(), SIGTERM);
  return child_->waitExit(std::chrono::seconds(30));
}

int AgentProcess::stop(milliseconds timeout) {
  ::kill(child_->pid(), SIGTERM);
  // Drain its stdout so that a full pipe cannot block its exit.
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    auto line = child_->readLine(milliseconds(100));
    if (!line.isOk() && line.status().code() != StatusCode::kTimedOut) break;
  }
  return child_->waitExit(milliseconds(1000));
}

Result<nlohmann::json> AgentProcess::report() const {
  std::ifstream file(reportPath_);
  if (!file) return protocolError("agent '" + name_ + "' wrote no report at " + reportPath_);
  auto parsed = nlohmann::json::parse(file, nullptr, false);
  if (parsed.is_discarded()) {
    return protocolError("agent '" + name_ + "' wrote a report that is not JSON: " + reportPath_);
  }
  return parsed;
}

}  // namespace kvx::bench
