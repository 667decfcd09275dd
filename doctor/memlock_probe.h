#pragma once

// The locked-memory limit (`ulimit -l`, RLIMIT_MEMLOCK) of this process: RDMA registration
// pins memory, and the bounce buffers and host pools kvx registers count against it. On the
// real root it comes from getrlimit; under a fixture root from the "Max locked memory" line of
// <root>/proc/self/limits (the format the kernel writes).

#include <cstdint>
#include <string>

#include "doctor/system_root.h"

namespace kvx::doctor {

struct MemlockLimit {
  bool known = false;
  bool unlimited = false;
  std::uint64_t bytes = 0;  // the soft limit, when known and not unlimited
  std::string source;       // "getrlimit(RLIMIT_MEMLOCK)" or the file read

  // True when `poolBytes` fits under the limit (an unknown limit counts as fitting).
  bool allows(std::uint64_t poolBytes) const { return !known || unlimited || bytes >= poolBytes; }
};

MemlockLimit probeMemlock(const SystemRoot& root);

}  // namespace kvx::doctor
