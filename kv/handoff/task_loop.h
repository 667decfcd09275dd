#pragma once

// TaskLoop: the KV layer's service thread. Every piece of request state is owned by it;
// other threads hand work over as tasks, and may wait for a task's result with a deadline.
// A periodic tick (timeouts, leases, peer liveness) runs every `tickEvery`.
//
// Thread safety: post() and call() from any thread; call() from the loop thread itself runs
// the task inline. Tasks run one at a time, in order, outside the loop's lock.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::kv::handoff {

class TaskLoop {
 public:
  TaskLoop(std::chrono::milliseconds tickEvery, std::function<void()> tick);
  // Stops the thread; tasks still queued are dropped.
  ~TaskLoop();

  void post(std::function<void()> task);
  bool onLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Runs `task` on the loop and returns its result; TIMED_OUT if it has not run by the
  // deadline (it may still run later), saying what the loop was doing meanwhile.
  template <typename T>
  Result<T> call(std::function<Result<T>()> task, Deadline deadline);
  Status callStatus(std::function<Status()> task, Deadline deadline);

 private:
  void run();
  // Runs one task or tick, recording since when the loop is busy with it.
  void runTimed(const std::function<void()>& work);
  // Why a call got no answer: how long the loop has been inside its current task, how many
  // tasks wait behind it.
  Status lateAnswer();

  const std::chrono::milliseconds tickEvery_;
  const std::function<void()> tick_;
  sync::Mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_ KVX_GUARDED_BY(mutex_);
  bool stopping_ KVX_GUARDED_BY(mutex_) = false;
  // When the task or tick now running began (steady clock ticks); 0 between tasks.
  std::atomic<Clock::rep> busySince_{0};
  std::thread thread_;
};

template <typename T>
Result<T> TaskLoop::call(std::function<Result<T>()> task, Deadline deadline) {
  if (onLoopThread()) return task();
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  post([promise, task = std::move(task)] { promise->set_value(task()); });
  if (future.wait_until(deadline) != std::future_status::ready) {
    return lateAnswer();
  }
  return future.get();
}

}  // namespace kvx::kv::handoff
