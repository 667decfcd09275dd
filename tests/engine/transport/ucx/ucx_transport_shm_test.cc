// kvx-test-labels: ucx
// The transport conformance suite on UCX over shared memory ("shm" = UCX_TLS sm,self).
#include "tests/engine/transport/transport_conformance.h"

namespace kvx::test {

ConformanceConfig conformanceConfig() {
  ConformanceConfig config;
  config.transport = "ucx";
  config.options.transports = "shm";
  // UCX notices a dead shared-memory peer only through keepalive, which checks that the
  // peer's process is alive: a transport destroyed inside this process is never reported.
  config.detectsPeerLoss = false;
  config.peerWritesDirectly = true;
  return config;
}

namespace conformance {

TEST_CASE("ucx/shm: the endpoint runs over shared memory", "[ucx]") {
  Link link;
  const std::string description = link.endpoint->description();
  INFO("description: " << description);
  CHECK(description.find("tcp") == std::string::npos);
  CHECK(description.find("/memory") != std::string::npos);
}

}  // namespace conformance
}  // namespace kvx::test
