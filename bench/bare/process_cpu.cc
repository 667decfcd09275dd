#include "bench/bare/process_cpu.h"

#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kvx::bench {

std::uint64_t processCpuNs() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto ns = [](const timeval& tv) {
    return static_cast<std::uint64_t>(tv.tv_sec) * 1'000'000'000 +
           static_cast<std::uint64_t>(tv.tv_usec) * 1'000;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

Status pinToCpu(int cpu) {
  if (cpu < 0) return Status::ok();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof(set), &set) != 0) {
    return invalidArgument("pinning to CPU " + std::to_string(cpu) + ": sched_setaffinity: " +
                           std::strerror(errno) + " (does this machine have that CPU?)");
  }
  return Status::ok();
}

}  // namespace kvx::bench
