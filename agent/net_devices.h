#pragma once

// Which network devices an agent's data path uses (AgentOptions::ucxNetDevices), and why.

#include <string>

namespace kvx::agent {

struct NetDeviceChoice {
  // TransportOptions::netDevices: a device list, or empty for every interface that is up
  // (UCX's own "all"; the socket transport publishes every IPv4 address, loopback last, and
  // an endpoint tries a peer's loopback addresses only where it published nothing else).
  std::string devices;
  std::string why;  // for the agent's start-up line
};

// `requested` "auto" (the default): loopback alone for an agent that admits loopback peers
// only (no token, no TLS, not --insecure: its peers are local processes), else every
// interface, so that a peer on another host is reached on the interface that routes to it
// and a peer on this host over loopback or shared memory. Anything else is taken as given.
NetDeviceChoice chooseNetDevices(const std::string& requested, bool loopbackPeersOnly);

}  // namespace kvx::agent
