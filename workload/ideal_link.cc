#include "workload/ideal_link.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace kvx::workload {

Result<std::vector<std::chrono::nanoseconds>> idealFifoLink(std::span<const LinkJob> jobs,
                                                            double bytesPerSecond) {
  if (!std::isfinite(bytesPerSecond) || bytesPerSecond <= 0) {
    return invalidArgument("an ideal link needs a positive, finite rate, not " +
                           std::to_string(bytesPerSecond) + " bytes/s");
  }
  std::vector<std::size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].arrival < jobs[b].arrival; });
  std::vector<std::chrono::nanoseconds> latencies(jobs.size());
  // In double nanoseconds: a whole trace of transfer times adds up without rounding drift.
  double linkFreeAt = -INFINITY;
  for (std::size_t i : order) {
    const double arrival = static_cast<double>(jobs[i].arrival.count());
    const double start = std::max(linkFreeAt, arrival);
    linkFreeAt = start + static_cast<double>(jobs[i].bytes) / bytesPerSecond * 1e9;
    latencies[i] = std::chrono::nanoseconds(std::llround(linkFreeAt - arrival));
  }
  return latencies;
}

}  // namespace kvx::workload
