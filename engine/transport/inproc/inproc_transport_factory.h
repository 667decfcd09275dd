#pragma once

// The in-process backend's only entry point. Every inproc transport in a process shares one
// fabric: an endpoint reaches any other live inproc transport by its address. Operations are
// performed at post time (memcpy) and completed on the next progress() call, so callers see
// the same asynchronous shape as with a real transport.

#include <memory>

#include "engine/transport/transport.h"

namespace kvx::engine::inproc {

Result<std::unique_ptr<Transport>> createInprocTransport(const TransportOptions& options);

}  // namespace kvx::engine::inproc
