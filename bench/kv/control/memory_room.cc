#include "bench/kv/control/memory_room.h"

#include <fmt/format.h>

#include "kvx/host_memory.h"

namespace kvx::bench {

std::optional<std::uint64_t> availableMemoryBytes() { return readHostMemoryRoom().available; }

Status checkMemoryRoom(std::uint64_t bytes) {
  constexpr std::uint64_t kMargin = 1ull << 30;
  const auto available = availableMemoryBytes();
  if (!available || *available >= bytes + kMargin) return Status::ok();
  constexpr double kGiB = 1u << 30;
  return resourceExhausted(fmt::format(
      "needs {:.2f} GiB plus a 1 GiB margin, but only {:.2f} GiB is available (MemAvailable)",
      static_cast<double>(bytes) / kGiB, static_cast<double>(*available) / kGiB));
}

}  // namespace kvx::bench
