#pragma once

// The first line a `kvx agent` prints on stdout, "LISTENING <address>": the address, read
// within `timeout`. REQUIREs the line (for tests that start agent processes).

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "process/agent_protocol.h"
#include "process/child_process.h"

namespace kvx::test {

inline std::string readListeningAddress(kvx::process::ChildProcess& agent,
                                        std::chrono::seconds timeout = std::chrono::seconds(30)) {
  auto line = agent.readLine(timeout);
  INFO("the agent's first line: " << (line.isOk() ? *line : line.status().toString()));
  REQUIRE(line.isOk());
  const process::AgentLine said = process::parseAgentLine(*line);
  REQUIRE(said.kind == process::AgentLine::Kind::kListening);
  return said.payload;
}

}  // namespace kvx::test
