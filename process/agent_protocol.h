#pragma once

// The `kvx agent` stdout protocol, both ends: one line "LISTENING <address>" once the agent
// serves, one line "STATS {json}" when it stops (cli/agent_command.cc writes them; the demo,
// the benchmarks and the tests read them from the agent processes they start).

#include <chrono>
#include <string>
#include <string_view>

#include "kvx/result.h"
#include "process/child_process.h"

namespace kvx::process {

std::string listeningLine(std::string_view address);
std::string statsLine(std::string_view json);

struct AgentLine {
  enum class Kind { kListening, kStats, kOther };
  Kind kind = Kind::kOther;
  std::string payload;  // the address, the STATS json, or the whole line
};
AgentLine parseAgentLine(std::string_view line);

// Reads the agent's lines until LISTENING and returns its address. An agent that stops
// first (a STATS line, or its stdout closed) fails with FAILED_PRECONDITION carrying the
// STATS json, or PEER_FAILED; TIMED_OUT at the deadline. Other lines are skipped.
Result<std::string> readListeningAddress(ChildProcess& agent, Deadline deadline);

// Reads the agent's lines until STATS and returns its json; TIMED_OUT at the deadline.
Result<std::string> readStats(ChildProcess& agent, Deadline deadline);

}  // namespace kvx::process
