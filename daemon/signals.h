#pragma once

// StopSignal: SIGINT and SIGTERM turned into a flag that any thread can test or wait for.
// install() blocks both signals in the calling thread and starts a watcher thread that reads
// them from a signalfd, so no work ever runs in a signal handler. Call it in main() before any
// other thread starts: threads (and child processes) inherit the blocked mask. A second SIGINT
// (Ctrl-C pressed again) ends the process at once with exit code 130; further SIGTERMs are
// ignored while it stops.
// SIGUSR1 is the operator's other word: give back the blocks a decode agent holds for lost
// prefill agents that never proved they stopped (KvAgent::giveBackHeldBlocks); it is counted,
// and the daemon acts on it (takeGiveBackRequests) without stopping.
// Thread safety: every member may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "kvx/result.h"
#include "sync/mutex.h"

namespace kvx::daemon {

class StopSignal {
 public:
  static Result<std::unique_ptr<StopSignal>> install();
  // Stops the watcher thread; the signals stay blocked.
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  bool requested() const { return requested_.load(std::memory_order_acquire); }
  // Waits until a stop is requested or `timeout` passes; true when stopped.
  bool waitFor(std::chrono::nanoseconds timeout);
  // Asks for a stop as if a signal came; `why` is what reason() returns.
  void request(const std::string& why);
  // "SIGTERM", "SIGINT", the text given to request(), or "" while nobody asked to stop.
  std::string reason() const;
  // The SIGUSR1s received since the last call.
  std::uint64_t takeGiveBackRequests() { return giveBacks_.exchange(0); }

 private:
  StopSignal(int signalFd, int wakeFd);
  void watch();

  const int signalFd_;
  const int wakeFd_;  // eventfd: the destructor's way to end watch()
  std::atomic<bool> requested_{false};
  std::atomic<std::uint64_t> giveBacks_{0};
  mutable sync::Mutex mutex_;
  std::condition_variable changed_;
  std::string reason_ KVX_GUARDED_BY(mutex_);
  std::thread watcher_;
};

}  // namespace kvx::daemon
