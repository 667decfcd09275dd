// kvx-test-labels: unit
// The transport conformance suite on the in-process transport.
#include "tests/engine/transport/transport_conformance.h"

namespace kvx::test {

ConformanceConfig conformanceConfig() {
  ConformanceConfig config;
  config.transport = "inproc";
  config.detectsPeerLoss = true;
  return config;
}

}  // namespace kvx::test
