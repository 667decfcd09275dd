#pragma once

// This process and its CPUs: the CPU time it has used (what the bare reference reports per
// request) and pinning it to one CPU (so that two busy processes on a small machine do not
// end up sharing one).

#include <cstdint>

#include "kvx/status.h"

namespace kvx::bench {

// User + system CPU time of this process, all threads (getrusage RUSAGE_SELF).
std::uint64_t processCpuNs();

// Pins the calling thread, and the threads it creates from now on, to `cpu`; no-op for -1.
// INVALID_ARGUMENT when the CPU does not exist or may not be used.
Status pinToCpu(int cpu);

}  // namespace kvx::bench
