#include "agent/net_devices.h"

namespace kvx::agent {

NetDeviceChoice chooseNetDevices(const std::string& requested, bool loopbackPeersOnly) {
  if (requested == "all") return {"", "every interface that is up, as configured"};
  if (requested != "auto") return {requested, "as configured"};
  if (loopbackPeersOnly) {
    return {"lo", "auto: loopback, as the agent admits local peers only (no token or TLS)"};
  }
  return {"",
          "auto: every interface that is up, so that each peer is reached on the one "
          "that routes to it"};
}

}  // namespace kvx::agent
