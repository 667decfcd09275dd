#pragma once

// Whether this machine has room for a measurement's memory right now: MemAvailable from
// /proc/meminfo, beside a margin, so that a `control` run on a shared machine reports
// "not measured: only 3.1 GiB available" instead of pushing another job into the OOM killer.
// Any thread.

#include <cstdint>
#include <optional>

#include "kvx/status.h"

namespace kvx::bench {

// MemAvailable in bytes; nullopt where /proc/meminfo cannot be read.
std::optional<std::uint64_t> availableMemoryBytes();

// OK when `bytes` plus 1 GiB fit in MemAvailable (or it cannot be read);
// RESOURCE_EXHAUSTED naming both sizes otherwise.
Status checkMemoryRoom(std::uint64_t bytes);

}  // namespace kvx::bench
