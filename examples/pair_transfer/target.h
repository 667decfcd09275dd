#pragma once

#include "examples/pair_transfer/options.h"

namespace pair_transfer {

// Serves a buffer of options.bytes to one initiator: prints "LISTEN host:port" on stdout,
// then answers fill/check commands until "exit", the initiator disconnects, or the timeout.
int runTarget(const Options& options);

}  // namespace pair_transfer
