#pragma once

// "host:port" addresses of the control channel. IPv4 "10.0.0.1:5000" and IPv6
// "[fe80::1]:5000" literals only: host names are not resolved, so that no call blocks on DNS.
// Stateless and thread-safe.

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <string_view>

#include "kvx/result.h"

namespace kvx::agent::channel {

// INVALID_ARGUMENT naming the text and what is wrong with it. Port 0 is accepted (listen
// addresses use it to pick a free port).
Result<boost::asio::ip::tcp::endpoint> parseHostPort(std::string_view text);

// "127.0.0.1:41234" or "[::1]:41234".
std::string formatHostPort(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace kvx::agent::channel
