#pragma once

// EtcdWatch: every put and delete under a key prefix, without polling and without a missed
// event. On its own thread it lists the prefix (onSnapshot: every key there, at a revision),
// then watches from the next revision through the JSON gateway's streaming /v3/watch
// (onEvent for each change, in revision order). A stream that breaks (etcd restarted or
// unreachable) is opened again from the revision after the last one seen, so nothing is
// missed; where etcd compacted that revision away, the prefix is listed again (a new
// snapshot). Attempts back off from 100 ms to 2 s, and each waits at most 5 s for etcd.
// Threads: the handlers run on the watch's thread, one at a time; the destructor stops it.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <string>
#include <thread>

#include "registry/etcd_client.h"
#include "sync/mutex.h"

namespace kvx::registry {

class EtcdWatch {
 public:
  struct Handlers {
    std::function<void(const EtcdListing& listing)> onSnapshot;
    std::function<void(bool deleted, const EtcdEntry& entry)> onEvent;
    // The stream is up (true) or broke (false, with why): for the log.
    std::function<void(bool up, const Status& why)> onConnection;
  };

  // REQUIRES: `client` outlives the watch.
  EtcdWatch(EtcdClient& client, std::string prefix, Handlers handlers);
  ~EtcdWatch();
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  std::int64_t revision() const { return revision_.load(); }  // the last one handled

 private:
  void run();
  // One stream from revision_ + 1 until it breaks or the watch stops; OK when stopped.
  Status stream();
  bool sleepUnlessStopped(std::chrono::milliseconds delay);

  EtcdClient& client_;
  const std::string prefix_;
  const Handlers handlers_;
  std::atomic<std::int64_t> revision_{0};
  std::atomic<bool> listed_{false};  // a snapshot was delivered (cleared by a compaction)
  std::atomic<bool> stopping_{false};
  sync::Mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;  // last
};

}  // namespace kvx::registry
