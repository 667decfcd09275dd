#include "kv/service_loop.h"

namespace kvx::kv {

namespace {

template <typename Guard>
void postThrough(Guard& guard, std::function<void()> task) {
  sync::MutexLock lock(guard.mutex);
  if (guard.loop != nullptr) guard.loop->post(std::move(task));
}

template <typename Guard>
void runThrough(Guard& guard, std::function<void()> task) {
  handoff::TaskLoop* entered = nullptr;
  {
    sync::MutexLock lock(guard.mutex);
    if (guard.loop == nullptr) return;
    if (!guard.loop->enterIdle()) {
      guard.loop->post(std::move(task));
      return;
    }
    entered = guard.loop;
  }
  // Outside the guard (the task posts through it). A close() meanwhile stops forwarding;
  // the loop's destructor waits for this turn to end.
  entered->runEntered(task);
}

}  // namespace

void ServiceLoop::start(std::chrono::milliseconds tickEvery, std::function<void()> tick) {
  loop_ = std::make_unique<handoff::TaskLoop>(tickEvery, std::move(tick));
  sync::MutexLock lock(guard_->mutex);
  guard_->loop = loop_.get();
}

ServiceLoop::~ServiceLoop() {
  close();
  loop_.reset();
}

void ServiceLoop::post(std::function<void()> task) { postThrough(*guard_, std::move(task)); }

std::function<void(std::function<void()>)> ServiceLoop::poster() const {
  return [weak = std::weak_ptr<Guard>(guard_)](std::function<void()> task) {
    if (auto guard = weak.lock()) postThrough(*guard, std::move(task));
  };
}

std::function<void(std::function<void()>)> ServiceLoop::runner() const {
  return [weak = std::weak_ptr<Guard>(guard_)](std::function<void()> task) {
    if (auto guard = weak.lock()) runThrough(*guard, std::move(task));
  };
}

void ServiceLoop::close() {
  sync::MutexLock lock(guard_->mutex);
  guard_->loop = nullptr;
}

}  // namespace kvx::kv
