#include "doctor/memlock_probe.h"

#include <sys/resource.h>

#include <charconv>
#include <sstream>

namespace kvx::doctor {
namespace {

MemlockLimit fromGetrlimit() {
  MemlockLimit limit;
  limit.source = "getrlimit(RLIMIT_MEMLOCK)";
  rlimit value{};
  if (::getrlimit(RLIMIT_MEMLOCK, &value) != 0) return limit;
  limit.known = true;
  limit.unlimited = value.rlim_cur == RLIM_INFINITY;
  limit.bytes = limit.unlimited ? 0 : static_cast<std::uint64_t>(value.rlim_cur);
  return limit;
}

// "Max locked memory         8388608              8388608              bytes"
MemlockLimit fromLimitsFile(const SystemRoot& root) {
  constexpr std::string_view kKey = "Max locked memory";
  MemlockLimit limit;
  limit.source = root.hostPath("/proc/self/limits").string();
  auto text = root.readText("/proc/self/limits");
  if (!text.isOk()) return limit;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(kKey, 0) != 0) continue;
    std::istringstream fields(line.substr(kKey.size()));
    std::string soft;
    fields >> soft;
    if (soft == "unlimited") {
      limit.known = limit.unlimited = true;
    } else {
      const auto [end, error] =
          std::from_chars(soft.data(), soft.data() + soft.size(), limit.bytes);
      limit.known = error == std::errc() && end == soft.data() + soft.size();
    }
    break;
  }
  return limit;
}

}  // namespace

MemlockLimit probeMemlock(const SystemRoot& root) {
  return root.isRealRoot() ? fromGetrlimit() : fromLimitsFile(root);
}

}  // namespace kvx::doctor
