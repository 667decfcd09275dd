#pragma once

// HostMemoryRoom: what the host can give new host memory, so that a pool larger than the
// machine is refused with the numbers instead of being granted and then filled until the
// out-of-memory killer ends other processes. kvx reads it whenever it allocates a host
// region (Agent::allocateMemory); a server or launcher can check a plan of several pools
// before it starts them. The figures:
//   - MemAvailable (/proc/meminfo): the pages a pool may come to use, populated or not;
//   - where the region may be a POSIX shared-memory file (UCX falls back to one when the
//     kernel refuses a System V segment: more than kernel.shmmax), the free space of the
//     shared-memory filesystem (/dev/shm), whose files outlive a killed process.
// A figure that cannot be read is not checked (nullopt).
//
// Pure functions over the files named; safe from any thread.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "kvx/status.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

struct HostMemoryRoom {
  std::optional<std::uint64_t> available;           // MemAvailable, bytes
  std::optional<std::uint64_t> largestSysvSegment;  // kernel.shmmax, bytes
  std::optional<std::uint64_t> sharedMemoryFree;    // free bytes of the /dev/shm filesystem
};

struct HostMemoryPaths {
  std::filesystem::path meminfo = "/proc/meminfo";
  std::filesystem::path shmmax = "/proc/sys/kernel/shmmax";
  std::filesystem::path sharedMemory = "/dev/shm";
};

HostMemoryRoom readHostMemoryRoom(const HostMemoryPaths& paths = {});

// OK when `bytes` fit; RESOURCE_EXHAUSTED naming the size asked (with `detail`, e.g. what it
// is made of, in brackets after it), the figure it exceeds and where that figure comes from.
Status checkHostMemoryRoom(std::uint64_t bytes, const HostMemoryRoom& room,
                           std::string_view detail = {});

}  // namespace kvx
#pragma GCC visibility pop
