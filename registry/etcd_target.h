#pragma once

// Where a cluster's registry is: `etcd://[user:password@]host:port[,host:port...]/cluster`.
// Hosts are IPv4 literals, "localhost" or bracketed IPv6 literals (no DNS lookup, so that
// nothing blocks on a resolver); the cluster name keys every agent of one cluster
// (/kvx/<cluster>/agents/<agent name>). Stateless.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/result.h"

namespace kvx::registry {

struct EtcdEndpoint {
  std::string host;  // as given, brackets dropped for IPv6
  std::uint16_t port = 0;
};

struct EtcdTarget {
  std::vector<EtcdEndpoint> endpoints;  // tried in turn
  std::string cluster;
  std::string user;  // empty: no authentication
  std::string password;

  // The key prefix of the cluster's agents, "/kvx/<cluster>/agents/".
  std::string agentsPrefix() const;
  // "etcd://host:port,.../cluster", without the password.
  std::string describe() const;
};

// INVALID_ARGUMENT naming the text and what is wrong with it. At most 16 endpoints; the
// cluster name is 1 to 128 characters of [A-Za-z0-9._-].
Result<EtcdTarget> parseEtcdTarget(std::string_view url);

}  // namespace kvx::registry
