#include "kv/handoff/task_loop.h"

#include <string>

namespace kvx::kv::handoff {

TaskLoop::TaskLoop(std::chrono::milliseconds tickEvery, std::function<void()> tick)
    : tickEvery_(tickEvery), tick_(std::move(tick)), thread_([this] { run(); }) {}

TaskLoop::~TaskLoop() {
  {
    sync::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void TaskLoop::post(std::function<void()> task) {
  {
    sync::MutexLock lock(mutex_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

Status TaskLoop::callStatus(std::function<Status()> task, Deadline deadline) {
  if (onLoopThread()) return task();
  auto promise = std::make_shared<std::promise<Status>>();
  auto future = promise->get_future();
  post([promise, task = std::move(task)] { promise->set_value(task()); });
  if (future.wait_until(deadline) != std::future_status::ready) return lateAnswer();
  return future.get();
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
  busySince_.store(Clock::now().time_since_epoch().count());
  work();
  busySince_.store(0);
}

void TaskLoop::run() {
  auto nextTick = Clock::now() + tickEvery_;
  sync::UniqueLock lock(mutex_);
  while (!stopping_) {
    if (tasks_.empty())
      wake_.wait_until(lock.native(), nextTick,
                       [&]() KVX_REQUIRES(mutex_) { return stopping_ || !tasks_.empty(); });
    if (stopping_) break;
    std::deque<std::function<void()>> batch;
    batch.swap(tasks_);
    lock.unlock();
    for (auto& task : batch) runTimed(task);
    if (Clock::now() >= nextTick) {
      runTimed(tick_);
      nextTick = Clock::now() + tickEvery_;
    }
    lock.lock();
  }
}

}  // namespace kvx::kv::handoff
