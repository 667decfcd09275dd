#pragma once

// The one place where Asio / system error codes become a kvx::Status.

#include <boost/system/error_code.hpp>
#include <string_view>

#include "kvx/status.h"

namespace kvx::agent::channel {

// "<what>: <error text> (<category> <value>)" with the given code.
Status asioStatus(StatusCode code, std::string_view what, const boost::system::error_code& error);

}  // namespace kvx::agent::channel
