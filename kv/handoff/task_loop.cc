#include "kv/handoff/task_loop.h"

#include <string>

namespace kvx::kv::handoff {
namespace {

// The loop whose task this thread is running, if any.
thread_local const TaskLoop* runningOnThisThread = nullptr;

}  // namespace

TaskLoop::TaskLoop(std::chrono::milliseconds tickEvery, std::function<void()> tick)
    : tickEvery_(tickEvery), tick_(std::move(tick)), thread_([this] { run(); }) {}

TaskLoop::~TaskLoop() {
  {
    sync::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // A turn another thread took before the stop (a message it runs in place) ends first.
  sync::UniqueLock lock(mutex_);
  wake_.wait(lock.native(), [&]() KVX_REQUIRES(mutex_) { return !running_; });
}

bool TaskLoop::onLoopThread() const { return runningOnThisThread == this; }

void TaskLoop::post(std::function<void()> task) {
  {
    sync::MutexLock lock(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
    // While a caller runs inline the loop thread cannot start it; leave() wakes it.
    if (running_) return;
  }
  wake_.notify_one();
}

bool TaskLoop::enterIdle() {
  sync::MutexLock lock(mutex_);
  if (stopping_ || running_ || !tasks_.empty()) return false;
  running_ = true;
  return true;
}

void TaskLoop::runEntered(const std::function<void()>& task) {
  struct Turn {
    TaskLoop& loop;
    ~Turn() { loop.leave(); }
  } turn{*this};
  runTimed(task);
}

void TaskLoop::leave() {
  sync::MutexLock lock(mutex_);
  running_ = false;
  // The loop thread, or the destructor once stopping. Under the lock: a destructor woken by
  // this could otherwise destroy the condition variable while the notify still uses it.
  if (loopWaits_ || !tasks_.empty() || stopping_) wake_.notify_all();
}

Status TaskLoop::callStatus(std::function<Status()> task, Deadline deadline) {
  return callOnLoop<Status>(std::move(task), deadline);
}

Status TaskLoop::lateAnswer() {
  std::size_t queued = 0;
  {
    sync::MutexLock lock(mutex_);
    queued = tasks_.size();
  }
  const Clock::rep since = busySince_.load();
  std::string doing;
  if (since == 0) {
    doing = "it is between tasks";
  } else {
    const auto busy = Clock::now() - Clock::time_point(Clock::duration(since));
    doing = "it has been inside one task for " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(busy).count()) +
            " ms";
  }
  return timedOut("the KV service thread did not answer in time: " + doing + ", " +
                  std::to_string(queued) + " more queued");
}

void TaskLoop::runTimed(const std::function<void()>& work) {
  const TaskLoop* outer = runningOnThisThread;
  runningOnThisThread = this;
  busySince_.store(Clock::now().time_since_epoch().count());
  work();
  busySince_.store(0);
  runningOnThisThread = outer;
}

void TaskLoop::run() {
  auto nextTick = Clock::now() + tickEvery_;
  sync::UniqueLock lock(mutex_);
  while (!stopping_) {
    if (running_) {
      // A caller holds the turn: wait for it to give the turn back, tick or not.
      loopWaits_ = true;
      wake_.wait(lock.native(), [&]() KVX_REQUIRES(mutex_) { return stopping_ || !running_; });
      loopWaits_ = false;
      continue;
    }
    if (tasks_.empty() && Clock::now() < nextTick) {
      wake_.wait_until(lock.native(), nextTick, [&]() KVX_REQUIRES(mutex_) {
        return stopping_ || (!tasks_.empty() && !running_);
      });
      continue;  // looks again: stopping, a caller inline, tasks, or the tick due
    }
    running_ = true;
    std::deque<std::function<void()>> batch;
    batch.swap(tasks_);
    lock.unlock();
    for (auto& task : batch) runTimed(task);
    if (Clock::now() >= nextTick) {
      runTimed(tick_);
      nextTick = Clock::now() + tickEvery_;
    }
    lock.lock();
    running_ = false;
  }
}

}  // namespace kvx::kv::handoff
