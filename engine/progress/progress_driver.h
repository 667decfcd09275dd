#pragma once

// ProgressDriver: the thread that keeps the data path moving. It calls `step` while there is
// work, spins briefly when idle, then sleeps on the transport's event fd (UCX wakeup), so an
// idle agent costs no CPU and a busy one reacts within microseconds. The target side of
// emulated RMA depends on this thread: it must keep running while peers move data.
//
// Threads: start()/stop() from the owner; kick() from any thread after posting work.

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "engine/transport/transport.h"

namespace kvx::engine {

class ProgressDriver {
 public:
  // `step` makes one round of progress and returns true if anything happened.
  ProgressDriver(Transport& transport, std::function<bool()> step, std::chrono::microseconds spin);
  ~ProgressDriver();

  void start();
  // Idempotent; joins the thread.
  void stop();
  // Tells the driver that new work was posted: wakes it if it sleeps.
  void kick();

 private:
  void run();
  void sleep(std::uint64_t kicksSeen);

  Transport& transport_;
  std::function<bool()> step_;
  std::chrono::microseconds spin_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<std::uint64_t> kicks_{0};
};

}  // namespace kvx::engine
