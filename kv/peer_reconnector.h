#pragma once

// PeerReconnector: dials peers again after their connection was lost. The agent tells it the
// address of every peer it connected to (watch) and when such a peer is lost (lost); it then
// calls `connect` on its own thread until the peer is back, with a delay that doubles from
// `firstDelay` up to `maxDelay` between attempts, forever (a peer that is gone for good costs
// one refused TCP connect per `maxDelay`). A peer that came back by other means (the user or
// the peer itself connected) stops being retried: `isConnected` is asked before each attempt.
//
// Threads: every member may be called from any thread; `connect` and `isConnected` run on the
// reconnector's own thread, never under its lock. The destructor stops it and waits for an
// attempt in progress to end (its deadline bounds that).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::kv {

struct ReconnectPolicy {
  std::chrono::milliseconds firstDelay{100};
  std::chrono::milliseconds maxDelay{2000};
  std::chrono::milliseconds attemptTimeout{3000};  // each attempt's deadline
  std::chrono::seconds reportEvery{30};            // a warning while a peer stays away
};

class PeerReconnector {
 public:
  // Connects to `address` before `deadline`; returns the name of the peer found there.
  using ConnectFn = std::function<Result<std::string>(const std::string& address, Deadline)>;
  using IsConnectedFn = std::function<bool(const std::string& peer)>;

  PeerReconnector(std::string agentName, ReconnectPolicy policy, ConnectFn connect,
                  IsConnectedFn isConnected);
  ~PeerReconnector();
  PeerReconnector(const PeerReconnector&) = delete;
  PeerReconnector& operator=(const PeerReconnector&) = delete;

  // `peer` is reachable at `address` (the latest address wins).
  void watch(const std::string& peer, const std::string& address);
  // `peer` was lost: starts dialing its address, unless it is not watched or already being
  // dialed.
  void lost(const std::string& peer);
  // Stops dialing anyone; later calls do nothing.
  void stop();

  std::uint64_t attempts() const;  // connect calls made, for tests and status

 private:
  struct Retry {
    Clock::time_point due;
    std::chrono::milliseconds delay;
    Clock::time_point since;       // when the peer was lost
    Clock::time_point reportedAt;  // the last warning
    std::uint64_t attempts = 0;
  };
  void run();
  void attempt(const std::string& peer, const std::string& address);

  const std::string agentName_;
  const ReconnectPolicy policy_;
  const ConnectFn connect_;
  const IsConnectedFn isConnected_;

  mutable sync::Mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, std::string> addresses_ KVX_GUARDED_BY(mutex_);  // watched peers
  std::map<std::string, Retry> retries_ KVX_GUARDED_BY(mutex_);          // lost peers being dialed
  std::uint64_t attempts_ KVX_GUARDED_BY(mutex_) = 0;
  bool stopping_ KVX_GUARDED_BY(mutex_) = false;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace kvx::kv
