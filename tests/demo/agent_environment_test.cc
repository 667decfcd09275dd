// kvx-test-labels: unit serial
#include "demo/agent_environment.h"

#include <catch2/catch.hpp>
#include <cstdlib>

using kvx::demo::clearAgentEnvironment;
using kvx::demo::keptForAgents;

TEST_CASE("the demo's agents keep what locates kvx's parts and drop agent options",
          "[agent_environment]") {
  CHECK(keptForAgents("KVX_GPU_RUNTIME"));
  CHECK(keptForAgents("KVX_UCX_PROBE"));  // a build copied to a GPU machine sets it
  CHECK(keptForAgents("PATH"));
  CHECK_FALSE(keptForAgents("KVX_PEERS"));
  CHECK_FALSE(keptForAgents("KVX_TRACE"));
  CHECK_FALSE(keptForAgents("KVX_AUTH_TOKEN"));

  ::setenv("KVX_UCX_PROBE", "/opt/kvx/bin/kvx-ucx-probe", 1);
  ::setenv("KVX_PEERS", "127.0.0.1:1", 1);
  clearAgentEnvironment();
  REQUIRE(std::getenv("KVX_UCX_PROBE") != nullptr);
  CHECK(std::string(std::getenv("KVX_UCX_PROBE")) == "/opt/kvx/bin/kvx-ucx-probe");
  CHECK(std::getenv("KVX_PEERS") == nullptr);
  CHECK(std::getenv("PATH") != nullptr);
  ::unsetenv("KVX_UCX_PROBE");
}
