#pragma once

// ServiceLoop: a KvAgent's service thread (handoff::TaskLoop) and the guard through which
// the agent's other threads post to it: notifications, peer events and move completions
// arrive on them and are re-posted here; once close() returns nothing more is forwarded, so
// that nothing reaches a state machine after it is gone.
//
// Until start() nothing is forwarded either: the parts that post (the state machines, through
// poster()) can be built first, and the thread starts once they are there.
//
// Thread safety: post(), poster()'s function and loop() calls (after start()) from any
// thread; start(), close() and destruction once each, from the owner.

#include <chrono>
#include <functional>
#include <memory>

#include "kv/handoff/task_loop.h"
#include "sync/mutex.h"

namespace kvx::kv {

class ServiceLoop {
 public:
  ServiceLoop() = default;
  // close(), then stops the thread (tasks still queued are dropped).
  ~ServiceLoop();
  ServiceLoop(const ServiceLoop&) = delete;
  ServiceLoop& operator=(const ServiceLoop&) = delete;

  // Starts the thread, ticking every `tickEvery`, and forwarding.
  void start(std::chrono::milliseconds tickEvery, std::function<void()> tick);
  bool started() const { return loop_ != nullptr; }
  // Runs `task` on the service thread, unless not started or closed (then it is dropped).
  void post(std::function<void()> task);
  // post() as a function that may outlive this loop (it then drops what it is given).
  std::function<void(std::function<void()>)> poster() const;
  // As poster(), but a task that finds the loop idle runs at once on the calling thread, in
  // the loop's turn (handoff::TaskLoop::enterIdle): for a thread that must not wait for the
  // loop and whose tasks never wait for that thread (the engine's progress thread).
  std::function<void(std::function<void()>)> runner() const;
  // For call()s that wait for a result. REQUIRES: started().
  handoff::TaskLoop& loop() { return *loop_; }
  void close();

 private:
  struct Guard {
    sync::Mutex mutex;
    handoff::TaskLoop* loop KVX_GUARDED_BY(mutex) = nullptr;
  };
  std::shared_ptr<Guard> guard_ = std::make_shared<Guard>();
  std::unique_ptr<handoff::TaskLoop> loop_;
};

}  // namespace kvx::kv
