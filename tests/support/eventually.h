#pragma once

// Polls a condition until it holds or a deadline passes: for state another thread sets.

#include <chrono>
#include <functional>
#include <thread>

namespace kvx::test {

// Whether `done` held within `within` (checked every millisecond, and once more at the end).
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds within = std::chrono::seconds(5)) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace kvx::test
