#include "cli/report_clocks.h"

#include <sys/resource.h>

namespace kvx::cli {
namespace {

std::int64_t micros(const timeval& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1000000 + static_cast<std::int64_t>(t.tv_usec);
}

}  // namespace

std::int64_t monotonicNs(Clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
}

CpuTime processCpuTime() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return CpuTime{};
  return CpuTime{micros(usage.ru_utime), micros(usage.ru_stime)};
}

nlohmann::json toJson(const CpuTime& cpu) { return {{"userUs", cpu.userUs}, {"sysUs", cpu.sysUs}}; }

}  // namespace kvx::cli
