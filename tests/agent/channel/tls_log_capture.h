#pragma once

// LogCapture: records what the default spdlog logger writes while it lives, so that a test
// can check what the far side of a refused connection logged. Install it before starting
// the channels whose lines it should see, and let it go after they stopped (the logger's
// sink list is not safe to change while other threads log).

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kvx::test {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(512)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Whether a line containing every one of `parts` is logged within `timeout`.
  bool waitFor(const std::vector<std::string>& parts,
               std::chrono::milliseconds timeout = std::chrono::seconds(5)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!contains(parts)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  // Whether a line logged so far contains every one of `parts`.
  bool contains(const std::vector<std::string>& parts) const {
    for (const std::string& line : sink_->last_formatted()) {
      if (std::all_of(parts.begin(), parts.end(), [&](const std::string& part) {
            return line.find(part) != std::string::npos;
          })) {
        return true;
      }
    }
    return false;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace kvx::test
