#pragma once

// Deadlines of the bare reference: every wait in it (pipes, child processes, UCX progress)
// ends by one.

#include <algorithm>
#include <chrono>

namespace kvx::bench {

using Deadline = std::chrono::steady_clock::time_point;

inline Deadline deadlineIn(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::milliseconds(static_cast<long long>(seconds * 1e3));
}

// A poll() timeout that ends by `deadline`, at most one second (so that callers recheck what
// they wait for at least that often); 0 once it has passed.
inline int pollTimeoutMs(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1000));
}

}  // namespace kvx::bench
