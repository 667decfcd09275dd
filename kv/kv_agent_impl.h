#pragma once

// KvAgent::Impl: a kvx::Agent, its KV pool, the port between them, the directory of KV
// peers and the request state machines of its side, all driven by one service thread
// (TaskLoop). Peer events, notifications and move completions are re-posted to that thread
// through a guard that shutdown closes, so that nothing reaches a state machine after it is
// gone. A peer's KV handshake is the agent's: its role and pool arrive in its metadata
// (kv/handoff/kv_agent_info.h), and the agent's join and departure events, under the
// agent's incarnation, are the one source of its coming and going.

#include <atomic>
#include <memory>

#include "kv/early_messages.h"
#include "kv/handoff/agent_kv_port.h"
#include "kv/handoff/decode_side.h"
#include "kv/handoff/prefill_side.h"
#include "kv/handoff/request_board.h"
#include "kv/handoff/task_loop.h"
#include "kv/kv_peer_directory.h"
#include "kv/peer_reconnector.h"
#include "kv/pool/block_allocator.h"
#include "kv/pool/free_block_canary.h"
#include "kv/pool/kv_pool.h"
#include "kvx/kv_agent.h"
#include "sync/mutex.h"

namespace kvx {

struct KvAgent::Impl {
  // Forwards tasks to the loop from open() until close().
  struct LoopGuard {
    sync::Mutex mutex;
    kv::handoff::TaskLoop* loop KVX_GUARDED_BY(mutex) = nullptr;
    void open(kv::handoff::TaskLoop* to) {
      sync::MutexLock lock(mutex);
      loop = to;
    }
    void post(std::function<void()> task) {
      sync::MutexLock lock(mutex);
      if (loop != nullptr) loop->post(std::move(task));
    }
    void close() {
      sync::MutexLock lock(mutex);
      loop = nullptr;
    }
  };

  static Result<std::unique_ptr<Impl>> create(KvAgentOptions options);
  ~Impl();

  Status shutdown(Deadline deadline, const std::string& reason);
  // Connects the agent to `address` (its handshake carries both KV descriptions) and waits
  // until the service thread has taken the peer in, by `deadline`.
  Result<std::string> connect(const std::string& address, Deadline deadline);

  // Service thread.
  void onNotification(const Notification& n);
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
  // Fails the peer's requests with `why`, frees what was reserved for it and forgets it,
  // then has the reconnector dial it again if it watches it.
  void forgetPeer(const std::string& peer, const Status& why);
  // How the prefill agent `peer` writes into this agent's pool (decode side), asked at its
  // join while its link is up: whether its process copies directly, and a watch on it.
  kv::handoff::PeerWriter writerOf(const std::string& peer, const kv::KvPeer& entry) const;
  // The sides' timers (leases, deadlines, retries).
  void onTick();
  std::size_t liveRequests() const;
  std::uint64_t availableBlocks() const;
  Deadline callDeadline() const { return deadlineIn(std::chrono::seconds(10)); }

  KvAgentOptions options;
  std::unique_ptr<Agent> agent;
  std::unique_ptr<kv::KvPool> pool;
  std::unique_ptr<kv::BlockAllocator> allocator;
  std::unique_ptr<kv::FreeBlockCanary> canary;  // decode with checkFreeBlocks
  std::unique_ptr<kv::handoff::AgentKvPort> port;
  kv::handoff::RequestBoard board;
  std::unique_ptr<kv::handoff::SideContext> context;
  std::unique_ptr<kv::handoff::PrefillSide> prefill;
  std::unique_ptr<kv::handoff::DecodeSide> decode;
  kv::KvPeerDirectory peers;
  kv::EarlyMessages early;  // service thread

  std::shared_ptr<LoopGuard> guard = std::make_shared<LoopGuard>();
  std::unique_ptr<kv::handoff::TaskLoop> loop;
  // Dials lost peers again (options.reconnect); null when off. Uses the loop: goes before it.
  std::unique_ptr<kv::PeerReconnector> reconnector;
  // Guards `reconnector` between the destructor, which takes it out, and forgetPeer on the
  // loop; the other uses are on the caller's thread before destruction.
  sync::Mutex reconnectorMutex;
  std::atomic<bool> accepting{true};
  std::atomic<bool> shutDown{false};
};

}  // namespace kvx
