#pragma once

// RequestBoard: the published view of every request, written by the KV service thread on
// each change and read by callers: status queries, waits for a terminal state or for a
// layer, and the queue of arrivals (decode side) that nextArrival() hands out.
// Terminal entries are kept for the last `retainTerminal` requests.
//
// A change wakes only the callers waiting on that request (arrivals: those waiting for
// one): with hundreds of requests in flight, a status change is one wake-up, not one per
// waiting caller.
//
// Thread safety: all members may be called from any thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kvx/kv_types.h"
#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::kv::handoff {

class RequestBoard {
 public:
  explicit RequestBoard(std::size_t retainTerminal = 65536) : retain_(retainTerminal) {}

  // Publishes a request's status; `layersDone` (decode side) may be empty.
  void publish(const KvRequestStatus& status, std::vector<bool> layersDone = {});
  void publishArrival(KvArrival arrival);
  // Drops an arrival nobody took yet (its request failed); true if it was there.
  bool withdrawArrival(const std::string& id);

  std::optional<KvRequestStatus> get(const std::string& id) const;
  // Waits until the request is terminal; NOT_FOUND if never published by the deadline is
  // not distinguishable from "not yet", so an unknown id waits until the deadline.
  Result<KvRequestStatus> waitTerminal(const std::string& id, Deadline deadline) const;
  Status waitLayer(const std::string& id, std::uint32_t layer, Deadline deadline) const;
  // The oldest arrival; TIMED_OUT at the deadline; once closed and empty, the close's status
  // at once.
  Result<KvArrival> nextArrival(Deadline deadline);
  // No arrival is expected any more (the agent shut down): nextArrival() hands out what is
  // queued, then returns `why` without waiting. Wakes every waiter.
  void close(Status why);
  // Wakes every waiter (shutdown); waits then return what they see.
  void wakeAll();
  // The application is going (KvAgent::cancelWaits): every wait, now or later, returns `why`
  // at once unless what it waits for is already there.
  void cancelWaits(Status why);

 private:
  struct Entry {
    KvRequestStatus status;
    std::vector<bool> layersDone;
  };
  // The callers waiting on one request; kept while any waits.
  struct Waiters {
    std::condition_variable changed;
    std::size_t count = 0;
  };

  // Waits on `id`'s changes until `done()` (called under mutex_) or the deadline; false at the
  // deadline. REQUIRES: `lock` holds mutex_.
  template <typename Predicate>
  bool waitOn(sync::UniqueLock& lock, const std::string& id, Deadline deadline,
              Predicate done) const KVX_REQUIRES(mutex_);

  const std::size_t retain_;
  mutable sync::Mutex mutex_;
  // By request.
  mutable std::unordered_map<std::string, std::shared_ptr<Waiters>> waiters_ KVX_GUARDED_BY(mutex_);
  mutable std::condition_variable arrived_;  // nextArrival()'s callers
  std::unordered_map<std::string, Entry> entries_ KVX_GUARDED_BY(mutex_);
  std::deque<std::string> terminalOrder_ KVX_GUARDED_BY(mutex_);
  std::deque<KvArrival> arrivals_ KVX_GUARDED_BY(mutex_);
  std::optional<Status> closed_ KVX_GUARDED_BY(mutex_);
  std::optional<Status> waitsCancelled_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::kv::handoff
