#pragma once

// KvAgent::Impl: a kvx::Agent and, over it, the KV agent's parts: its own pool (LocalPool),
// the directory of its KV peers, and its request state machines (KvSides), all driven by one
// service thread (ServiceLoop). Peer events, notifications and move completions are
// re-posted to that thread through the loop's guard, which shutdown closes, so that nothing
// reaches a state machine after it is gone. A peer's KV handshake is the agent's: its role
// and pool arrive in its metadata (kv/handoff/kv_agent_info.h), and the agent's join and
// departure events, under the agent's incarnation, are the one source of its coming and
// going.
//
// Threads: `options`, `agent` and `local.pool` are fixed after create and used from any
// thread; `peers` and `sides->board()` are thread-safe; `sides`, `local`'s other parts and
// `early` belong to the service thread; the reconnector is guarded by its mutex.

#include <atomic>
#include <memory>

#include "kv/early_messages.h"
#include "kv/handoff/peer_writer.h"
#include "kv/kv_peer_directory.h"
#include "kv/kv_sides.h"
#include "kv/local_pool.h"
#include "kv/peer_reconnector.h"
#include "kv/service_loop.h"
#include "kvx/kv_agent.h"
#include "sync/mutex.h"

namespace kvx {

struct KvAgent::Impl {
  static Result<std::unique_ptr<Impl>> create(KvAgentOptions options);
  ~Impl();

  // KvAgent::shutdown. `applicationGone`: the agent is being destroyed, so nothing waits for
  // what only the application could do (KvSides::endApplicationWaits).
  Status shutdown(Deadline deadline, const std::string& reason, bool applicationGone = false);
  // Connects the agent to `address` (its handshake carries both KV descriptions) and waits
  // until the service thread has taken the peer in, by `deadline`.
  Result<std::string> connect(const std::string& address, Deadline deadline);

  // Service thread.
  // A KV message from `peer`, decoded on the thread it arrived on.
  void onMessage(const std::string& peer, kv::handoff::KvMessage message);
  // Hands a message of a compatible peer to this agent's side.
  void deliver(const std::string& peer, const kv::handoff::KvMessage& message);
  // A peer joined or left the agent (kvx::PeerEvent): a join is the KV handshake (the
  // peer's KvAgentInfo is checked against this agent's and its pool attached); a departure
  // of the incarnation in the directory, or a join of another, ends its KV requests.
  void onPeerEvent(const PeerEvent& event);
  void onJoined(const std::string& peer, std::uint64_t incarnation);
  // Whether this agent can hand KV to the agent `info` describes: its pool as this side
  // addresses it, or why not. Fills `entry` from its KV description as far as that goes.
  Result<kv::PoolDescription> admit(const PeerInfo& info, kv::KvPeer& entry) const;
  // How the prefill agent `peer` writes into this agent's pool (decode side), asked at its
  // join while its link is up: whether its process copies directly, and a watch on it.
  kv::handoff::PeerWriter writerOf(const std::string& peer, const kv::KvPeer& entry) const;
  // Fails the peer's requests with `why`, frees what was reserved for it and forgets it,
  // then has the reconnector dial it again if it watches it.
  void forgetPeer(const std::string& peer, const Status& why);
  // The sides' timers (leases, deadlines, retries).
  void onTick();

  // Runs `task` on the service thread and waits for it (callDeadline()).
  template <typename T>
  Result<T> call(std::function<Result<T>()> task) const {
    return service->loop().call<T>(std::move(task), callDeadline());
  }
  Status callStatus(std::function<Status()> task) const {
    return service->loop().callStatus(std::move(task), callDeadline());
  }
  Deadline callDeadline() const { return deadlineIn(std::chrono::seconds(10)); }

  KvAgentOptions options;
  std::unique_ptr<Agent> agent;
  kv::LocalPool local;
  std::unique_ptr<kv::KvSides> sides;
  kv::KvPeerDirectory peers;
  kv::EarlyMessages early;  // service thread
  std::unique_ptr<kv::ServiceLoop> service = std::make_unique<kv::ServiceLoop>();
  // Dials lost peers again (options.reconnect); null when off. Uses the loop: goes before it.
  std::unique_ptr<kv::PeerReconnector> reconnector;
  // Guards `reconnector` between the destructor, which takes it out, and forgetPeer on the
  // loop; the other uses are on the caller's thread before destruction.
  sync::Mutex reconnectorMutex;
  std::atomic<bool> accepting{true};
  std::atomic<bool> shutDown{false};
};

}  // namespace kvx
