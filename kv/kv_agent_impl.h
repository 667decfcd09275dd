#pragma once

// KvAgent::Impl: a kvx::Agent, its KV pool, the port between them and the request state
// machines, all driven by one service thread (TaskLoop). Notifications and move
// completions are re-posted to that thread through a guard that shutdown closes, so that
// nothing reaches a state machine after it is gone.

#include <map>
#include <memory>
#include <set>

#include "kv/handoff/agent_kv_port.h"
#include "kv/handoff/decode_side.h"
#include "kv/handoff/prefill_side.h"
#include "kv/handoff/request_board.h"
#include "kv/handoff/task_loop.h"
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

  // The KV handshake with one peer (service thread).
  struct PeerEntry {
    KvRole role = KvRole::kDecode;
    bool compatible = false;
    std::string reason;
    std::uint64_t totalBlocks = 0;
    std::uint32_t kvHeads = 0;
    std::uint64_t incarnation = 0;  // of the agent that said hello; 0 when unknown
    std::uint64_t session = 0;      // the peer's KV session, from its hello; 0 when not said
  };

  static Result<std::unique_ptr<Impl>> create(KvAgentOptions options);
  ~Impl();

  Status shutdown(Deadline deadline, const std::string& reason);
  // Connects and completes the KV handshake by `deadline`. A hello that gets no reply at
  // all within half the time left (at least kHelloRetryAfter: under heavy loss a reply takes
  // seconds of retransmissions) is tried again on a fresh connection: the first message on
  // a new UCX endpoint has been seen to stay stuck in UCX (shared memory, once in hundreds
  // of connects; tcp opened under loss). Connects to one address take turns.
  Result<std::string> connect(const std::string& address, Deadline deadline);
  static constexpr std::chrono::seconds kHelloRetryAfter{3};

  // Service thread.
  void onNotification(const Notification& n);
  void onHello(const std::string& peer, const kv::handoff::HelloMsg& hello);
  // A peer joined or left the agent (kvx::PeerEvent). A departure of the incarnation that
  // said hello, or a join of another incarnation under its name, ends its KV requests.
  void onPeerEvent(const PeerEvent& event);
  // Fails the peer's requests with `why`, frees what was reserved for it and forgets its
  // handshake (endSession), then has the reconnector dial it again if it watches it.
  void forgetPeer(const std::string& peer, const Status& why);
  // The KV half of forgetPeer, for a peer that is still connected but ended the session:
  // the next hello starts a new one.
  void endSession(const std::string& peer, const Status& why);
  // This agent's session with `peer` (HelloMsg::session), made when first needed.
  std::uint64_t ownSession(const std::string& peer);
  // Also notices peers the agent lost without an event reaching us (a safety net).
  void onTick();
  std::size_t liveRequests() const;
  std::uint64_t availableBlocks() const;
  Deadline callDeadline() const { return deadlineIn(std::chrono::seconds(10)); }

  // One connect and hello; `unanswered` says the peer sent no reply by `answerBy` (the
  // connection is then dropped).
  Result<std::string> connectOnce(const std::string& address, Deadline deadline, Deadline answerBy,
                                  bool& unanswered);

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
  std::map<std::string, PeerEntry> kvPeers;  // service thread
  // This agent's KV session with each peer it said hello to (service thread): kept while
  // the session lasts, so a connect() to a peer already in session repeats it.
  std::map<std::string, std::uint64_t> ownSessions;
  std::uint64_t sessionsMade = 0;  // numbers them; the incarnation tells restarts apart

  // Handshake outcomes, for connect() to wait on.
  sync::Mutex peersMutex;
  std::condition_variable peersChanged;
  std::map<std::string, PeerEntry> handshakes KVX_GUARDED_BY(peersMutex);
  // Peers whose reply hello arrived (attach may follow).
  std::set<std::string> repliesSeen KVX_GUARDED_BY(peersMutex);
  // Addresses a connect() is in progress to.
  std::set<std::string> dialing KVX_GUARDED_BY(peersMutex);

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
