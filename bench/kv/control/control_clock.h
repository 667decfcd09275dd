#pragma once

// The clocks of the `control` scenario: wall time on the steady clock (kvx::Clock, as every
// kvx deadline) and the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which counts
// only what this thread executed: the figure for "engine CPU per descriptor".

#include <time.h>

#include <chrono>
#include <cstdint>

#include "kvx/transfer.h"

namespace kvx::bench {

// CPU time the calling thread has used, in nanoseconds.
inline std::uint64_t threadCpuNs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Milliseconds from `from` to `to`, fractional.
inline double msBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

inline double msSince(Clock::time_point from) { return msBetween(from, Clock::now()); }

}  // namespace kvx::bench
