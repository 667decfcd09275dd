#include "daemon/report_clocks.h"

#include <sys/resource.h>
#include <time.h>

#include <atomic>

#include "engine/gpu/gpu_runtime.h"

namespace kvx::daemon {
namespace {

std::atomic<std::int64_t> contentNs{0};

std::int64_t threadCpuNs() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

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
  return CpuTime{
      micros(usage.ru_utime), micros(usage.ru_stime),
      contentNs.load(std::memory_order_relaxed) / 1000,
      std::chrono::duration_cast<std::chrono::microseconds>(engine::gpu::emulatedCopyCpu())
          .count()};
}

nlohmann::json toJson(const CpuTime& cpu) {
  return {{"userUs", cpu.userUs},
          {"sysUs", cpu.sysUs},
          {"contentUs", cpu.contentUs},
          {"emulatedCopyUs", cpu.emulatedCopyUs}};
}

ContentCpuScope::ContentCpuScope() : startNs_(threadCpuNs()) {}

ContentCpuScope::~ContentCpuScope() {
  contentNs.fetch_add(threadCpuNs() - startNs_, std::memory_order_relaxed);
}

}  // namespace kvx::daemon
