#pragma once

// TaskLoop: the KV layer's service thread. Every piece of request state is owned by it;
// other threads hand work over as tasks, and may wait for a task's result with a deadline.
// A periodic tick (timeouts, leases, peer liveness) runs every `tickEvery`.
//
// Thread safety: post() and call() from any thread; call() from the loop thread itself runs
// the task inline. Tasks run one at a time, in order, outside the loop's lock.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "kvx/result.h"
#include "kvx/transfer.h"

namespace kvx::agent::handoff {

class TaskLoop {
 public:
  TaskLoop(std::chrono::milliseconds tickEvery, std::function<void()> tick);
  // Stops the thread; tasks still queued are dropped.
  ~TaskLoop();

  void post(std::function<void()> task);
  bool onLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Runs `task` on the loop and returns its result; TIMED_OUT if it has not run by the
  // deadline (it may still run later).
  template <typename T>
  Result<T> call(std::function<Result<T>()> task, Deadline deadline);
  Status callStatus(std::function<Status()> task, Deadline deadline);

 private:
  void run();

  const std::chrono::milliseconds tickEvery_;
  const std::function<void()> tick_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

template <typename T>
Result<T> TaskLoop::call(std::function<Result<T>()> task, Deadline deadline) {
  if (onLoopThread()) return task();
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  post([promise, task = std::move(task)] { promise->set_value(task()); });
  if (future.wait_until(deadline) != std::future_status::ready) {
    return timedOut("the KV service thread did not answer in time");
  }
  return future.get();
}

}  // namespace kvx::agent::handoff
