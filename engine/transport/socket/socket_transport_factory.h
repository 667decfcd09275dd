#pragma once

// The socket backend's only entry point.

#include <memory>

#include "engine/transport/transport.h"

namespace kvx::engine::socket {

Result<std::unique_ptr<Transport>> createSocketTransport(const TransportOptions& options);

}  // namespace kvx::engine::socket
