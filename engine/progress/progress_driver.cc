#include "engine/progress/progress_driver.h"

#include <poll.h>

namespace kvx::engine {
namespace {

// Upper bound on one sleep: a safety net only, wake-ups normally come from the event fd.
constexpr int kMaxSleepMs = 100;

}  // namespace

ProgressDriver::ProgressDriver(Transport& transport, std::function<bool()> step,
                               std::chrono::microseconds spin)
    : transport_(transport), step_(std::move(step)), spin_(spin) {}

ProgressDriver::~ProgressDriver() { stop(); }

void ProgressDriver::start() {
  thread_ = std::thread([this] { run(); });
}

void ProgressDriver::stop() {
  stopping_.store(true);
  transport_.wake();
  if (thread_.joinable()) thread_.join();
}

void ProgressDriver::kick() {
  kicks_.fetch_add(1);
  if (sleeping_.load()) transport_.wake();
}

void ProgressDriver::run() {
  auto lastWork = std::chrono::steady_clock::now();
  while (!stopping_.load()) {
    const std::uint64_t seen = kicks_.load();  // before the step, so no kick is missed
    if (step_()) {
      lastWork = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - lastWork < spin_) continue;
    sleep(seen);
    lastWork = std::chrono::steady_clock::now();
  }
}

void ProgressDriver::sleep(std::uint64_t seen) {
  // Announce the sleep before the last look for work, and have kick() bump the counter
  // before it looks at the flag: one of the two always sees the other.
  sleeping_.store(true);
  if (kicks_.load() == seen && !stopping_.load() && transport_.arm()) {
    const int fd = transport_.eventFd();
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, kMaxSleepMs);
    } else {
      ::poll(nullptr, 0, 1);
    }
  }
  sleeping_.store(false);
}

}  // namespace kvx::engine
