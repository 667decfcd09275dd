#pragma once

// CpuLoad: busy threads, one per core, while it lives: a process resumed or started under
// it competes for the CPU (fault tests that make late arrivals likely).

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace kvx::test {

class CpuLoad {
 public:
  CpuLoad() {
    for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i) {
      threads_.emplace_back([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
        }
      });
    }
  }
  CpuLoad(const CpuLoad&) = delete;
  CpuLoad& operator=(const CpuLoad&) = delete;
  ~CpuLoad() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace kvx::test
