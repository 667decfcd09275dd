#include "process/agent_protocol.h"

namespace kvx::process {
namespace {

constexpr std::string_view kListening = "LISTENING ";
constexpr std::string_view kStats = "STATS ";

// The next line by `deadline`; TIMED_OUT naming `what` once it passed.
Result<std::string> lineBy(ChildProcess& agent, Deadline deadline, std::string_view what) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) {
    return timedOut("agent process " + std::to_string(agent.pid()) + " printed no " +
                    std::string(what) + " line in time");
  }
  return agent.readLine(left);
}

}  // namespace

std::string listeningLine(std::string_view address) {
  return std::string(kListening) + std::string(address);
}

std::string statsLine(std::string_view json) { return std::string(kStats) + std::string(json); }

AgentLine parseAgentLine(std::string_view line) {
  if (line.starts_with(kListening)) {
    return {AgentLine::Kind::kListening, std::string(line.substr(kListening.size()))};
  }
  if (line.starts_with(kStats)) {
    return {AgentLine::Kind::kStats, std::string(line.substr(kStats.size()))};
  }
  return {AgentLine::Kind::kOther, std::string(line)};
}

Result<std::string> readListeningAddress(ChildProcess& agent, Deadline deadline) {
  while (true) {
    KVX_ASSIGN_OR_RETURN(std::string text, lineBy(agent, deadline, "LISTENING"));
    AgentLine line = parseAgentLine(text);
    if (line.kind == AgentLine::Kind::kListening) return line.payload;
    if (line.kind == AgentLine::Kind::kStats) {
      return failedPrecondition("the agent stopped before it served: STATS " + line.payload);
    }
  }
}

Result<std::string> readStats(ChildProcess& agent, Deadline deadline) {
  while (true) {
    KVX_ASSIGN_OR_RETURN(std::string text, lineBy(agent, deadline, "STATS"));
    AgentLine line = parseAgentLine(text);
    if (line.kind == AgentLine::Kind::kStats) return line.payload;
  }
}

}  // namespace kvx::process
