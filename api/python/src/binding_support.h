#pragma once

// What the bindings of kvx::Agent and kvx::KvAgent share: options from Python keyword
// arguments, times in seconds, memory kinds by name, and calls made without the GIL.

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "api/python/src/status_errors.h"
#include "kvx/agent.h"
#include "kvx/agent_options.h"
#include "kvx/memory.h"
#include "sync/mutex.h"

namespace kvx::python {

// Seconds (>= 0) as milliseconds; kvx.InvalidArgument naming `what` otherwise.
std::chrono::milliseconds toMillis(double seconds, const char* what);

// "host" or "cuda"; kvx.InvalidArgument otherwise.
MemoryKind kindFrom(const std::string& text);

// The value of keyword argument `key` in `options`, removed from it; none when absent or
// None.
std::optional<pybind11::object> popOption(pybind11::dict& options, const char* key);

// AgentOptions named `name`, from the keyword arguments kvx.Agent documents (listen_address,
// data_path, net_devices, auth_token, gpu_path, caller_progress, connect_timeout,
// peer_timeout, heartbeat_interval), each removed from `options` once read.
AgentOptions takeAgentOptions(const std::string& name, pybind11::dict& options);

// TypeError naming the first keyword argument left in `options` (none was expected).
void refuseUnknown(const pybind11::dict& options, const char* what);

// Runs `call` with the GIL released (kvx may block in it; other Python threads go on).
template <typename Call>
auto unlocked(Call&& call) {
  pybind11::gil_scoped_release released;
  return call();
}

// A Python object's hold on a kvx agent (`T`: Agent or KvAgent): close() drops it; calls in
// flight on other threads keep it until they end; calls after close raise
// kvx.FailedPrecondition.
template <typename T>
class AgentHandle {
 public:
  AgentHandle(std::unique_ptr<T> agent, std::string name)
      : agent_(std::move(agent)), name_(std::move(name)) {}

  std::shared_ptr<T> get() const {
    sync::MutexLock lock(mutex_);
    if (!agent_) raise(failedPrecondition("agent '" + name_ + "' is closed"));
    return agent_;
  }

  void close() {
    std::shared_ptr<T> last;
    {
      sync::MutexLock lock(mutex_);
      last = std::move(agent_);
    }
    pybind11::gil_scoped_release released;
    // A thread waiting in wait_notification, next_arrival or wait_layer returns now
    // (CANCELLED), letting go of the agent so that it can be destroyed.
    if (last) last->cancelWaits();
    last.reset();  // joins kvx's threads (unless a call in flight still holds it)
  }

  const std::string& name() const { return name_; }

 private:
  mutable sync::Mutex mutex_;
  std::shared_ptr<T> agent_ KVX_GUARDED_BY(mutex_);
  std::string name_;
};

}  // namespace kvx::python
