#pragma once

// The one place that knows which transports are compiled in.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/transport/transport.h"

namespace kvx::engine {

// Creates a transport by name ("ucx", "socket", "inproc"). NOT_FOUND names the ones available.
Result<std::unique_ptr<Transport>> createTransport(std::string_view name,
                                                   const TransportOptions& options);

std::vector<std::string> availableTransports();

}  // namespace kvx::engine
