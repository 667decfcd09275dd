#include "tests/support/test_agent.h"

#include <catch2/catch.hpp>

namespace kvx::test {

AgentOptions agentOptions(const std::string& name, const std::string& transport) {
  AgentOptions options;
  options.name = name;
  if (!selectDataPath(options, transport)) FAIL("unknown data path '" << transport << "'");
  return options;
}

std::unique_ptr<Agent> makeAgent(const std::string& name, const std::string& transport) {
  auto agent = Agent::create(agentOptions(name, transport));
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

}  // namespace kvx::test
