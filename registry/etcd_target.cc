#include "registry/etcd_target.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kvx::registry {
namespace {

constexpr std::size_t kMaxEndpoints = 16;
constexpr std::size_t kMaxCluster = 128;

Status bad(std::string_view url, const std::string& why) {
  // The URL may carry a password: name its shape, not its text.
  const std::size_t at = url.find('@');
  const std::string shown = at == std::string_view::npos
                                ? std::string(url.substr(0, 200))
                                : "etcd://<credentials>@" + std::string(url.substr(at + 1, 200));
  return invalidArgument("registry '" + shown + "': " + why +
                         " (expected etcd://[user:password@]host:port[,host:port...]/cluster)");
}

Result<EtcdEndpoint> parseEndpoint(std::string_view url, std::string_view text) {
  EtcdEndpoint endpoint;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad(url, "endpoint '" + std::string(text) + "' is not [ipv6]:port");
    }
    endpoint.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return bad(url, "endpoint '" + std::string(text) + "' is not host:port");
    }
    endpoint.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (error != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    return bad(url, "endpoint '" + std::string(text) + "' has no port from 1 to 65535");
  }
  endpoint.port = static_cast<std::uint16_t>(value);
  const bool plain = std::all_of(endpoint.host.begin(), endpoint.host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':';
  });
  if (endpoint.host.empty() || !plain) {
    return bad(url, "endpoint '" + std::string(text) + "' has no host");
  }
  return endpoint;
}

}  // namespace

std::string EtcdTarget::agentsPrefix() const { return "/kvx/" + cluster + "/agents/"; }

std::string EtcdTarget::describe() const {
  std::string text = "etcd://";
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const bool v6 = endpoints[i].host.find(':') != std::string::npos;
    text += (i ? "," : "") + (v6 ? "[" + endpoints[i].host + "]" : endpoints[i].host) + ":" +
            std::to_string(endpoints[i].port);
  }
  return text + "/" + cluster;
}

Result<EtcdTarget> parseEtcdTarget(std::string_view url) {
  constexpr std::string_view kScheme = "etcd://";
  if (url.substr(0, kScheme.size()) != kScheme) return bad(url, "not an etcd:// URL");
  std::string_view rest = url.substr(kScheme.size());
  EtcdTarget target;
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = rest.substr(0, at);
    const std::size_t colon = credentials.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return bad(url, "credentials are not user:password");
    }
    target.user = std::string(credentials.substr(0, colon));
    target.password = std::string(credentials.substr(colon + 1));
    rest = rest.substr(at + 1);
  }
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return bad(url, "no cluster name");
  target.cluster = std::string(rest.substr(slash + 1));
  const bool named = std::all_of(target.cluster.begin(), target.cluster.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (target.cluster.empty() || target.cluster.size() > kMaxCluster || !named) {
    return bad(url, "the cluster name must be 1 to 128 characters of A-Z a-z 0-9 . _ -");
  }
  std::string_view hosts = rest.substr(0, slash);
  while (!hosts.empty()) {
    const std::size_t comma = hosts.find(',');
    KVX_ASSIGN_OR_RETURN(EtcdEndpoint endpoint, parseEndpoint(url, hosts.substr(0, comma)));
    target.endpoints.push_back(std::move(endpoint));
    if (target.endpoints.size() > kMaxEndpoints) return bad(url, "more than 16 endpoints");
    hosts = comma == std::string_view::npos ? std::string_view() : hosts.substr(comma + 1);
  }
  if (target.endpoints.empty()) return bad(url, "no endpoint");
  return target;
}

}  // namespace kvx::registry
