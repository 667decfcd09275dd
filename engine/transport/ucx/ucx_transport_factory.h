#pragma once

// The UCX backend's only entry point.

#include <memory>

#include "engine/transport/transport.h"

namespace kvx::engine::ucx {

Result<std::unique_ptr<Transport>> createUcxTransport(const TransportOptions& options);

}  // namespace kvx::engine::ucx
