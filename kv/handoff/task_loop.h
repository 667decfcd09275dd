#pragma once

// TaskLoop: the KV layer's service thread. Every piece of request state is owned by it;
// other threads hand work over as tasks, and may wait for a task's result with a deadline.
// A periodic tick (timeouts, leases, peer liveness) runs every `tickEvery`.
//
// Tasks run one at a time, in the order they were posted, outside the loop's lock. A call()
// that finds the loop idle (no task running or queued) runs its task on the caller's own
// thread, holding the loop's turn as the loop thread would: the answer then costs no
// hand-over to the loop thread and back (two wake-ups, a third of a small request's latency
// on a VM). Tasks posted meanwhile wait for it, and the loop thread takes them up after.
//
// A thread that hands tasks over without waiting for them (a progress thread delivering
// messages) may likewise run one in its own turn when the loop is idle: enterIdle(), then
// runEntered().
//
// A call run in place runs to its end, as any task does: its deadline bounds only the wait
// for a busy loop (a task that posts a move during a link reset waits for the reset's own
// bounded reopen). onLoopThread() knows the innermost loop only: a task of one loop must not
// call another loop whose task calls back into the first (it would wait for a turn its own
// thread holds, until the deadline); no code does.
//
// Thread safety: post(), call() and enterIdle()/runEntered() from any thread; call() from
// within a task (on the loop thread or inside another call()) runs the task inline. The
// destructor waits for a turn taken by another thread to end.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
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
  // Whether this thread is running one of this loop's tasks (or its tick) now.
  bool onLoopThread() const;

  // Runs `task` in the loop's turn and returns its result; TIMED_OUT if it has not run by
  // the deadline (it may still run later), saying what the loop was doing meanwhile.
  template <typename T>
  Result<T> call(std::function<Result<T>()> task, Deadline deadline);
  Status callStatus(std::function<Status()> task, Deadline deadline);

  // Takes the loop's turn for this thread when nothing runs and nothing is queued (and the
  // loop is not stopping). True: the caller must call runEntered() next, once.
  bool enterIdle();
  // Runs `task` in the turn enterIdle() took, then gives the turn back.
  void runEntered(const std::function<void()>& task);

 private:
  void leave();
  // Runs `task` in the turn enterIdle() took, as the loop thread would.
  template <typename R>
  R runInline(const std::function<R()>& task);
  template <typename R>
  R callOnLoop(std::function<R()> task, Deadline deadline);

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
  // Someone (the loop thread or a caller inline) is running tasks.
  bool running_ KVX_GUARDED_BY(mutex_) = false;
  // The loop thread waits for an inline caller to give the turn back.
  bool loopWaits_ KVX_GUARDED_BY(mutex_) = false;
  // When the task or tick now running began (steady clock ticks); 0 between tasks.
  std::atomic<Clock::rep> busySince_{0};
  std::thread thread_;
};

template <typename R>
R TaskLoop::runInline(const std::function<R()>& task) {
  std::optional<R> result;
  runEntered([&] { result.emplace(task()); });
  return std::move(*result);
}

template <typename R>
R TaskLoop::callOnLoop(std::function<R()> task, Deadline deadline) {
  if (onLoopThread()) return task();
  if (enterIdle()) return runInline(task);
  auto promise = std::make_shared<std::promise<R>>();
  auto future = promise->get_future();
  post([promise, task = std::move(task)] { promise->set_value(task()); });
  if (future.wait_until(deadline) != std::future_status::ready) return R(lateAnswer());
  return future.get();
}

template <typename T>
Result<T> TaskLoop::call(std::function<Result<T>()> task, Deadline deadline) {
  return callOnLoop<Result<T>>(std::move(task), deadline);
}

}  // namespace kvx::kv::handoff
