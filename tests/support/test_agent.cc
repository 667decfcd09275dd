#include "tests/support/test_agent.h"

#include <catch2/catch.hpp>

namespace kvx::test {

AgentOptions agentOptions(const std::string& name, const std::string& transport) {
  AgentOptions options;
  options.name = name;
  options.transport = transport == "inproc" ? "inproc" : "ucx";
  options.ucxTransports = transport == "inproc" ? "" : transport;
  return options;
}

std::unique_ptr<Agent> makeAgent(const std::string& name, const std::string& transport) {
  auto agent = Agent::create(agentOptions(name, transport));
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

}  // namespace kvx::test
