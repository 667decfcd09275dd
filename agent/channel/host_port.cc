#include "agent/channel/host_port.h"

#include <boost/asio/ip/address.hpp>
#include <charconv>

namespace kvx::agent::channel {

Result<boost::asio::ip::tcp::endpoint> parseHostPort(std::string_view text) {
  const std::string quoted = "'" + std::string(text.substr(0, 300)) + "'";
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalidArgument("address " + quoted + " is not [IPv6]:port");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return invalidArgument("address " + quoted + " is not host:port (missing ':port')");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return invalidArgument("address " + quoted + ": write IPv6 addresses as [addr]:port");
    }
  }
  if (host.empty()) return invalidArgument("address " + quoted + " has an empty host");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return invalidArgument("address " + quoted + ": port '" + std::string(port) +
                           "' is not a number in 0..65535");
  }
  boost::system::error_code error;
  const auto address = boost::asio::ip::make_address(std::string(host), error);
  if (error) {
    return invalidArgument("address " + quoted + ": host '" + std::string(host) +
                           "' is not an IPv4 or IPv6 literal (names are not resolved)");
  }
  return boost::asio::ip::tcp::endpoint(address, static_cast<unsigned short>(value));
}

std::string formatHostPort(const boost::asio::ip::tcp::endpoint& endpoint) {
  const std::string host = endpoint.address().to_string();
  const std::string port = std::to_string(endpoint.port());
  return endpoint.address().is_v6() ? "[" + host + "]:" + port : host + ":" + port;
}

}  // namespace kvx::agent::channel
