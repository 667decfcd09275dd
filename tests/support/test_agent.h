#pragma once

// Agents for in-process tests: one call per agent over "inproc", "tcp" or "shm".

#include <memory>
#include <string>

#include "kvx/agent.h"

namespace kvx::test {

// AgentOptions for `name` on `transport` ("inproc", or a UCX transport: "tcp", "shm").
AgentOptions agentOptions(const std::string& name, const std::string& transport);
// Creates the agent; fails the running test on error.
std::unique_ptr<Agent> makeAgent(const std::string& name, const std::string& transport);

}  // namespace kvx::test
