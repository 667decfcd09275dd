// kvx-test-labels: unit
// Which network devices an agent's data path uses by default (agent/net_devices.h).
#include "agent/net_devices.h"

#include <catch2/catch.hpp>

namespace kvx::agent {

TEST_CASE("net devices: auto is loopback for a local-only agent, else every interface",
          "[net-devices]") {
  const NetDeviceChoice local = chooseNetDevices("auto", true);
  CHECK(local.devices == "lo");
  CHECK(local.why.find("local peers only") != std::string::npos);
  // A peer on another host must be reached on the interface that routes to it: empty is
  // every interface (UCX's "all"; the socket transport publishes each, loopback last).
  CHECK(chooseNetDevices("auto", false).devices.empty());
  CHECK(chooseNetDevices("all", true).devices.empty());
}

TEST_CASE("net devices: a named list is taken as given", "[net-devices]") {
  for (bool local : {true, false}) {
    const NetDeviceChoice given = chooseNetDevices("eth1,mlx5_0:1", local);
    CHECK(given.devices == "eth1,mlx5_0:1");
    CHECK(given.why == "as configured");
  }
}

}  // namespace kvx::agent
