#include "agent/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace kvx::agent {

void configureLogging() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Logs go to stderr: stdout belongs to the program that links kvx.
    spdlog::set_default_logger(spdlog::stderr_color_mt("kvx"));
    spdlog::set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
    const char* level = std::getenv("KVX_LOG_LEVEL");
    if (level == nullptr || *level == '\0') {
      spdlog::set_level(spdlog::level::info);
      return;
    }
    const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
    spdlog::set_level(parsed);
    if (parsed == spdlog::level::off && std::string(level) != "off") {
      spdlog::set_level(spdlog::level::info);
      spdlog::warn(
          "KVX_LOG_LEVEL='{}' is not a level (trace, debug, info, warn, error, "
          "critical, off); using info",
          level);
    }
  });
}

}  // namespace kvx::agent
