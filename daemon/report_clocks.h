#pragma once

// The clocks the agents' --report files use, so that reports of several processes on one
// machine can be compared: instants as std::chrono::steady_clock nanoseconds (CLOCK_MONOTONIC
// on Linux, one clock for every process of the machine), and the process's CPU time
// (getrusage RUSAGE_SELF). Pure functions; safe from any thread.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "kvx/kv_types.h"
#include "kvx/transfer.h"

namespace kvx::daemon {

// steady_clock nanoseconds since its epoch (boot, on Linux).
std::int64_t monotonicNs(Clock::time_point at);
inline std::int64_t monotonicNowNs() { return monotonicNs(Clock::now()); }

// A duration given in (fractional) milliseconds, as the command lines and traces give them.
inline std::chrono::nanoseconds fromMs(double ms) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
}

// The process's CPU time so far, in microseconds, user and system, and two parts of it that
// are not the cost of moving KV blocks: filling and checking their content (ContentCpuScope),
// and copies a GPU makes by DMA that the fake GPU runtime makes with memcpy
// (engine::gpu::emulatedCopyCpu). Reports carry all four, so that readers can take the
// parts out of a difference of two snapshots.
struct CpuTime {
  std::int64_t userUs = 0;
  std::int64_t sysUs = 0;
  std::int64_t contentUs = 0;
  std::int64_t emulatedCopyUs = 0;
};
CpuTime processCpuTime();
// {"userUs": ..., "sysUs": ..., "contentUs": ..., "emulatedCopyUs": ...}
nlohmann::json toJson(const CpuTime& cpu);

// Adds the calling thread's CPU time over its lifetime to the process's content CPU
// (CpuTime::contentUs): wrap the filling and checking of KV block content in one.
class ContentCpuScope {
 public:
  ContentCpuScope();
  ~ContentCpuScope();
  ContentCpuScope(const ContentCpuScope&) = delete;
  ContentCpuScope& operator=(const ContentCpuScope&) = delete;

 private:
  std::int64_t startNs_;
};

// CPU microseconds the agent spent readying its peers' pools on the data path so far
// (KvPoolUsage::peersReadyCpuNs): a one-time cost per peer that reports give apart from the
// CPU per request.
inline std::int64_t peersReadyCpuUs(const KvPoolUsage& usage) {
  return static_cast<std::int64_t>(usage.peersReadyCpuNs / 1000);
}

}  // namespace kvx::daemon
