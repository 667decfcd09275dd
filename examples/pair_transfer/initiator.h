#pragma once

#include "examples/pair_transfer/options.h"

namespace pair_transfer {

// Starts (or connects to) a target, moves options.bytes in options.segment descriptors,
// verifies every byte and prints the throughput. Returns the process exit code.
int runInitiator(const Options& options);

}  // namespace pair_transfer
