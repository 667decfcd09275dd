#pragma once

// UcxWorker: one ucp_worker (UCX's progress engine and communication resources) with the
// lock that serialises every UCX call of one transport, and the per-thread setup (a CUDA
// context) that those calls may need.
//
// Thread mode: the worker is created UCS_THREAD_MODE_SERIALIZED ("many threads, one at a
// time") and guarded by mutex() (held through UcxWorker::Lock). The progress thread takes
// that lock in a tight loop, so the
// lock lets callers in first (CallerFirstMutex): progress() and arm() wait while a caller
// waits, instead of winning every race against it. Completion callbacks must run under the
// transport's lock anyway (completion.h), and the endpoint/key/request bookkeeping needs a lock of
// its own, so one kvx mutex around UCX gives a single lock order and no second lock inside UCX
// (UCS_THREAD_MODE_MULTI would add a UCX-internal lock under ours on every call).
// ucp_worker_signal() is the exception: UCX makes it safe from any thread, so wake() never
// waits for a long progress() or close().
//
// Ownership: shared by the transport, its endpoints, remote keys and memory registrations,
// so that none of them can outlive the UCX objects it uses.

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/progress/caller_first_mutex.h"
#include "engine/transport/transport.h"
#include "engine/transport/ucx/ucx_context.h"
#include "engine/transport/ucx/ucx_message_receiver.h"
#include "kvx/result.h"

namespace kvx::engine::ucx {

class UcxWorker {
 public:
  static Result<std::shared_ptr<UcxWorker>> create(std::shared_ptr<UcxContext> context,
                                                   std::string agentName);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  // Holds the lock that serialises every UCX call of this worker (mutex()) for a scope, taken
  // as a caller after the calling thread was set up (setThreadSetup): every UCX call happens
  // under it, so no thread reaches UCX unprepared.
  class KVX_SCOPED_CAPABILITY Lock {
   public:
    explicit Lock(const UcxWorker& worker) KVX_ACQUIRE(worker.mutex_)
        : lock_(worker.preparedMutex()) {}
    ~Lock() KVX_RELEASE() {}
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    CallerLock lock_;
  };
  // The lock itself, for annotations: what Lock holds, and what the worker's state and its
  // endpoints' are guarded by.
  CallerFirstMutex& mutex() const KVX_RETURN_CAPABILITY(mutex_) { return mutex_; }
  // See Transport::setThreadSetup. REQUIRES: no other thread uses the worker yet.
  void setThreadSetup(ThreadSetup setup) { threadSetup_ = std::move(setup); }
  ucp_worker_h handle() const { return worker_; }
  const UcxContext& context() const { return *context_; }
  const std::string& agentName() const { return agentName_; }
  // The worker's UCX address in a frame (ucx_frame.h): what Transport::localAddress returns.
  const std::vector<std::uint8_t>& address() const { return address_; }
  int eventFd() const { return eventFd_; }

  // Makes what progress UCX can make now (bounded rounds of ucp_worker_progress), then runs
  // the endpoint error handlers queued meanwhile, outside the lock. Takes the lock after any
  // caller waiting for it.
  bool progress();
  // ucp_worker_arm: true when the event fd may be slept on. Takes the lock after any caller
  // waiting for it.
  bool arm();
  // ucp_worker_signal: any thread, no lock.
  void signal();
  // Takes the lock.
  void setMessageHandler(MessageHandler handler) KVX_EXCLUDES(mutex_);

  // REQUIRES: the lock held. Progresses until `done()` (called with the lock held) or
  // `deadline`, releasing the lock while UCX has nothing to do so that other threads are not
  // shut out. Returns done().
  bool progressUntil(const std::function<bool()>& done,
                     std::chrono::steady_clock::time_point deadline) KVX_REQUIRES(mutex_);

  // REQUIRES: the lock held. Queues `handler(status)` for the next progress() to run outside
  // the lock (UCX calls endpoint error callbacks from deep inside its progress).
  void deferErrorLocked(EndpointErrorHandler handler, Status status) KVX_REQUIRES(mutex_);

 private:
  UcxWorker(std::shared_ptr<UcxContext> context, std::string agentName);
  Status init();

  // Runs threadSetup_ on the calling thread unless it already succeeded there for this worker.
  void prepareThread() const;
  // prepareThread(), then mutex_: for Lock.
  CallerFirstMutex& preparedMutex() const {
    prepareThread();
    return mutex_;
  }

  std::shared_ptr<UcxContext> context_;
  std::string agentName_;
  const std::uint64_t serial_;  // tells workers apart in each thread's "set up for" record
  ThreadSetup threadSetup_;     // set before the worker is shared between threads
  // Callers through Lock, the progress thread through progress() and arm().
  mutable CallerFirstMutex mutex_;
  ucp_worker_h worker_ = nullptr;
  int eventFd_ = -1;
  std::vector<std::uint8_t> address_;
  UcxMessageReceiver receiver_ KVX_GUARDED_BY(mutex_);
  std::vector<std::pair<EndpointErrorHandler, Status>> deferredErrors_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine::ucx
