#pragma once

// Populating pages ahead of use. Memory that kvx allocates (and a peer's shared-memory
// segment that UCX maps into this process) is otherwise faulted in 4 KiB at a time by the
// first transfer that touches it: on this machine clearing and mapping those pages cost
// 5-10x the copy itself, so a fresh pool moved 2-3 GB/s where a warm one moves 15-20.
// Deployments allocate pools once at start-up, so the cost belongs there, not on the first
// requests.

#include <cstdint>

#include "kvx/status.h"

namespace kvx::engine {

// Makes every page of [address, address + length) present and writable in this process's
// page tables (MADV_POPULATE_WRITE; on kernels without it, by touching each page). A range
// the kernel cannot populate (device memory, a driver mapping) is refused, never touched. The
// range must be mapped writable and nobody else may be writing it yet when the fallback
// runs (the fallback reads and rewrites one byte per page). Thread-safe.
Status populatePages(void* address, std::uint64_t length);

}  // namespace kvx::engine
