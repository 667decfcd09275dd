#include "kv/kv_agent_impl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace kvx {

using namespace kv::handoff;

Result<std::unique_ptr<KvAgent::Impl>> KvAgent::Impl::create(KvAgentOptions options) {
  if (options.prefixChunkTokens == 0) {
    return invalidArgument("prefixChunkTokens must be > 0");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  KVX_ASSIGN_OR_RETURN(impl->agent, Agent::create(options.agent));
  KVX_ASSIGN_OR_RETURN(impl->pool, kvx::kv::KvPool::create(*impl->agent, options.pool));
  if (options.prefixChunkTokens % impl->pool->info().tokensPerBlock != 0) {
    return invalidArgument("prefixChunkTokens (" + std::to_string(options.prefixChunkTokens) +
                           ") must be a multiple of the pool's tokens per block (" +
                           std::to_string(impl->pool->info().tokensPerBlock) + ")");
  }
  impl->allocator = std::make_unique<kv::BlockAllocator>(impl->pool->info().blocks);
  KVX_ASSIGN_OR_RETURN(impl->port, AgentKvPort::create(*impl->agent, *impl->pool));
  std::weak_ptr<LoopGuard> weakGuard = impl->guard;
  if (options.role == KvRole::kDecode && options.checkFreeBlocks) {
    KVX_ASSIGN_OR_RETURN(impl->canary, kv::FreeBlockCanary::create(*impl->pool));
    spdlog::info(
        "{}: checking free blocks for late writes (each freed block is filled, then "
        "checked when placed again and at shutdown)",
        options.agent.name);
  }
  impl->context = std::make_unique<SideContext>(SideContext{
      options.agent.name, *impl->port, impl->pool->description(), *impl->allocator, impl->board,
      [weakGuard](std::function<void()> task) {
        if (auto g = weakGuard.lock()) g->post(std::move(task));
      },
      options, impl->canary.get()});
  if (options.role == KvRole::kPrefill) {
    impl->prefill = std::make_unique<PrefillSide>(*impl->context);
  } else {
    impl->decode = std::make_unique<DecodeSide>(*impl->context);
  }
  Impl* self = impl.get();
  impl->loop =
      std::make_unique<TaskLoop>(std::chrono::milliseconds(50), [self] { self->onTick(); });
  impl->guard->open(impl->loop.get());
  impl->agent->setNotificationHandler([weakGuard, self](Notification n) {
    if (auto g = weakGuard.lock()) g->post([self, n = std::move(n)] { self->onNotification(n); });
  });
  impl->agent->setPeerEventHandler([weakGuard, self](const PeerEvent& event) {
    if (auto g = weakGuard.lock()) g->post([self, event] { self->onPeerEvent(event); });
  });
  if (options.reconnect) {
    kv::ReconnectPolicy policy;
    policy.maxDelay = std::max(options.reconnectMaxDelay, policy.firstDelay);
    policy.attemptTimeout = options.reconnectAttemptTimeout;
    impl->reconnector = std::make_unique<kv::PeerReconnector>(
        options.agent.name, policy,
        [self](const std::string& address, Deadline deadline) {
          return self->connect(address, deadline);
        },
        [self](const std::string& peer) {
          sync::MutexLock lock(self->peersMutex);
          auto it = self->handshakes.find(peer);
          return it != self->handshakes.end() && it->second.compatible;
        });
  }
  spdlog::info("{}: {} agent on {}, pool {} ({} MiB, {} tensors)", options.agent.name,
               toString(options.role), impl->agent->listenAddress(),
               kvx::kv::describe(impl->pool->description()),
               impl->pool->info().blockBytes * impl->pool->info().blocks >> 20,
               impl->pool->info().tensors);
  return impl;
}

KvAgent::Impl::~Impl() {
  if (loop) (void)shutdown(deadlineIn(std::chrono::seconds(2)), "the agent is being destroyed");
  // Destroying the reconnector waits for an attempt in progress, which needs the loop, so the
  // loop still runs here and may be in forgetPeer: take the reconnector out under its lock.
  std::unique_ptr<kv::PeerReconnector> gone;
  {
    sync::MutexLock lock(reconnectorMutex);
    gone = std::move(reconnector);
  }
  gone.reset();
  if (agent) {
    agent->setNotificationHandler(nullptr);
    agent->setPeerEventHandler(nullptr);
  }
  guard->close();
  loop.reset();
  port.reset();
  prefill.reset();
  decode.reset();
  canary.reset();
  pool.reset();
  agent.reset();
}

std::uint64_t KvAgent::Impl::availableBlocks() const {
  return decode ? decode->availableBlocks() : allocator->freeBlocks();
}

std::size_t KvAgent::Impl::liveRequests() const {
  return prefill ? prefill->liveRequests() : decode->liveRequests();
}

Status KvAgent::Impl::shutdown(Deadline deadline, const std::string& reason) {
  if (shutDown.exchange(true)) return Status::ok();
  accepting.store(false);
  if (reconnector) reconnector->stop();
  {
    sync::MutexLock lock(peersMutex);  // wakes a connect() waiting for a handshake
  }
  peersChanged.notify_all();
  (void)loop->callStatus(
      [this] {
        if (decode) decode->stopAccepting();
        return Status::ok();
      },
      callDeadline());
  auto live = [this] {
    return loop->call<std::size_t>([this]() -> Result<std::size_t> { return liveRequests(); },
                                   callDeadline());
  };
  auto wait = [&](Deadline until) {
    while (Clock::now() < until) {
      auto n = live();
      if (n.isOk() && *n == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  // Blocks still held for lost PUSH peers go back now; with a canary, every free block is
  // checked once more: a late write into a block never handed out again shows here.
  auto sweep = [this] {
    (void)loop->callStatus(
        [this] {
          if (decode) {
            decode->releaseHeld(Clock::time_point::max());
            decode->checkFreeBlocks();
          }
          return Status::ok();
        },
        callDeadline());
  };
  if (wait(deadline)) {
    sweep();
    return Status::ok();
  }
  (void)loop->callStatus(
      [this, reason] {
        const Status why = cancelled(reason);
        if (prefill) prefill->failAll(why);
        if (decode) decode->failAll(why);
        return Status::ok();
      },
      callDeadline());
  // Failure paths drain moves and wait for acknowledgements; give them a bounded while.
  if (!wait(std::max(deadline, Clock::now()) + std::chrono::seconds(1))) {
    spdlog::warn("{}: {} requests still live at shutdown", options.agent.name, live().valueOr(0));
  }
  sweep();
  board.wakeAll();
  return Status::ok();
}

Result<std::string> KvAgent::Impl::connect(const std::string& address, Deadline deadline) {
  if (shutDown.load()) return failedPrecondition("the KV agent is shut down");
  if (Clock::now() >= deadline) {
    return timedOut("connecting to " + address + ": the deadline passed before the call");
  }
  {
    // One connect per address at a time (the user's and the reconnector's may meet): two at
    // once would share the half-made connection, and the first to give up would drop it
    // under the other.
    sync::UniqueLock lock(peersMutex);
    const bool turn = peersChanged.wait_until(
        lock.native(), deadline,
        [&]() KVX_REQUIRES(peersMutex) { return !dialing.contains(address) || shutDown.load(); });
    if (shutDown.load()) return failedPrecondition("the KV agent is shut down");
    if (!turn) {
      return timedOut("connecting to " + address +
                      ": another connect to it was still in progress at the deadline");
    }
    dialing.insert(address);
  }
  struct DialEnd {
    Impl& self;
    const std::string& address;
    ~DialEnd() {
      {
        sync::MutexLock lock(self.peersMutex);
        self.dialing.erase(address);
      }
      self.peersChanged.notify_all();
    }
  } dialEnd{*this, address};
  while (true) {
    const auto left = deadline - Clock::now();
    const bool mayRetry = left >= 2 * kHelloRetryAfter;
    bool unanswered = false;
    auto connected =
        connectOnce(address, deadline, mayRetry ? Clock::now() + left / 2 : deadline, unanswered);
    if (connected.isOk() || !unanswered || !mayRetry || shutDown.load()) return connected;
    spdlog::warn("{}: {}; connecting again", options.agent.name, connected.status().message());
  }
}

Result<std::string> KvAgent::Impl::connectOnce(const std::string& address, Deadline deadline,
                                               Deadline answerBy, bool& unanswered) {
  const auto started = Clock::now();
  const auto waited = [&] {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
  };
  KVX_ASSIGN_OR_RETURN(std::string peer, agent->connect(address, deadline));
  {
    sync::MutexLock lock(peersMutex);
    repliesSeen.erase(peer);
  }
  // The hello goes out from the service thread, but this call does not wait for that thread
  // separately: a busy one (a pool being readied) delays the handshake, and the one deadline
  // below covers both.
  auto hello = std::make_shared<Status>();
  loop->post([this, peer, hello] {
    Status sent = port->send(peer, HelloMsg{options.role, pool->description(), availableBlocks(),
                                            false, options.defaultMode, ownSession(peer)});
    if (sent.isOk()) return;
    {
      sync::MutexLock lock(peersMutex);
      *hello = std::move(sent);
    }
    peersChanged.notify_all();
  });
  sync::UniqueLock lock(peersMutex);
  const auto done = [&]() KVX_REQUIRES(peersMutex) {
    return handshakes.contains(peer) || !hello->isOk() || shutDown.load();
  };
  bool answered = peersChanged.wait_until(lock.native(), answerBy, done);
  // A reply that arrived is being handled (readying the peer's pool can take seconds): wait
  // for it until the caller's deadline.
  if (!answered && repliesSeen.contains(peer))
    answered = peersChanged.wait_until(lock.native(), deadline, done);
  if (!hello->isOk()) {
    return hello->withContext("sending the KV hello to '" + peer + "' at " + address);
  }
  if (!answered) {
    unanswered = !repliesSeen.contains(peer);
    lock.unlock();
    // No handshake, so no request with the peer: drop the half-made connection (its control
    // link and data-path endpoint), so that the next connect() builds both afresh rather
    // than sending its hello down a link that lost the last one (a UCX tcp endpoint opened
    // under heavy loss stayed silent for 15 s after the loss ended).
    Status dropped = agent->disconnect(peer);
    return timedOut("agent '" + peer + "' at " + address + " did not complete the KV handshake " +
                    (unanswered ? "(no reply to the hello) " : "") + "within " + waited() +
                    " ms (is it a kvx KV agent, and is this agent's KV service thread busy?); "
                    "the connection was dropped" +
                    (dropped.isOk() ? "" : " (" + dropped.toString() + ")"));
  }
  if (!handshakes.contains(peer)) return failedPrecondition("the KV agent is shut down");
  const PeerEntry& entry = handshakes.at(peer);
  if (!entry.compatible) return failedPrecondition(entry.reason);
  lock.unlock();
  if (reconnector) reconnector->watch(peer, address);
  return peer;
}

void KvAgent::Impl::onNotification(const Notification& n) {
  auto message = kvx::kv::handoff::decode(n.payload);
  if (!message.isOk()) {
    spdlog::warn("{}: dropped a message from '{}': {}", options.agent.name, n.peer,
                 message.status().toString());
    return;
  }
  if (const auto* hello = std::get_if<HelloMsg>(&*message)) return onHello(n.peer, *hello);
  if (const auto* refused = std::get_if<RefusedMsg>(&*message); refused && refused->req.empty()) {
    PeerEntry entry{KvRole::kDecode, false, refused->why.message(), 0};
    kvPeers[n.peer] = entry;
    {
      sync::MutexLock lock(peersMutex);
      handshakes[n.peer] = entry;
    }
    peersChanged.notify_all();
    spdlog::warn("{}: '{}' refused the KV handshake: {}", options.agent.name, n.peer,
                 refused->why.message());
    return;
  }
  auto known = kvPeers.find(n.peer);
  if (known == kvPeers.end() || !known->second.compatible) {
    spdlog::warn("{}: dropped a KV message from '{}', which has not completed the KV handshake",
                 options.agent.name, n.peer);
    return;
  }
  if (prefill) prefill->onMessage(n.peer, *message);
  if (decode) decode->onMessage(n.peer, *message);
}

void KvAgent::Impl::onHello(const std::string& peer, const HelloMsg& hello) {
  auto info = agent->peerInfo(peer);
  if (!info.isOk()) {
    // A hello that arrived after its connection was dropped (a connect that gave up on it):
    // there is no one to answer, and refusing it would leave a stale refusal for the next
    // connect to find.
    spdlog::info("{}: ignored a KV hello from '{}', which is no longer connected ({})",
                 options.agent.name, peer, info.status().message());
    return;
  }
  if (hello.reply) {
    {
      sync::MutexLock lock(peersMutex);
      repliesSeen.insert(peer);
    }
    peersChanged.notify_all();
  }
  const std::uint64_t incarnation = info->incarnation;
  if (auto known = kvPeers.find(peer); known != kvPeers.end() &&
                                       known->second.incarnation != incarnation &&
                                       incarnation != 0 && known->second.incarnation != 0) {
    forgetPeer(peer, peerFailed("peer '" + peer + "' restarted (new incarnation)"));
  }
  if (auto known = kvPeers.find(peer); known != kvPeers.end() && known->second.session != 0 &&
                                       hello.session != 0 &&
                                       known->second.session != hello.session) {
    // The peer dropped our session (it failed its requests with us, as when its data path
    // to us failed) and started another, while this side saw no link close: its new
    // connection came up before the old one went. Without this, what we reserved for the
    // old session would wait for its leases.
    spdlog::info(
        "{}: '{}' started a new KV session (session {}, was {}); the old one's "
        "requests end",
        options.agent.name, peer, hello.session, known->second.session);
    endSession(peer, peerFailed("peer '" + peer +
                                "' ended its KV session with this agent (its requests with "
                                "this agent failed on its side) and started a new one"));
  }
  PeerEntry entry;
  entry.incarnation = incarnation;
  entry.session = hello.session;
  entry.role = hello.role;
  entry.totalBlocks = hello.pool.blocks;
  entry.kvHeads = hello.pool.shape.kvHeads;
  Status ok = kvx::kv::checkSliceCompatible(pool->description(), hello.pool);
  if (ok.isOk() && hello.role == options.role) {
    ok = failedPrecondition("both agents are " + std::string(toString(options.role)) +
                            " agents; a KV hand-off needs a prefill and a decode agent");
  }
  // Only the side that will initiate moves readies the other's memory now: a prefill agent
  // pushes by default, a decode agent pulls only from a prefill agent that says it pulls.
  const KvMode peerMode = hello.mode;
  const bool initiates = options.role == KvRole::kPrefill ? options.defaultMode == KvMode::kPush
                                                          : peerMode == KvMode::kPull;
  if (ok.isOk()) ok = port->attachPool(peer, hello.pool, initiates);
  entry.compatible = ok.isOk();
  entry.reason = ok.isOk() ? "" : ok.message();
  kvPeers[peer] = entry;
  if (!hello.reply) {
    if (ok.isOk()) {
      (void)port->send(peer, HelloMsg{options.role, pool->description(), availableBlocks(), true,
                                      options.defaultMode, ownSession(peer)});
    } else {
      (void)port->send(peer, RefusedMsg{"", ok, false, 0});
    }
  }
  if (ok.isOk()) {
    auto path = agent->dataPathDescription(peer);
    spdlog::info("{}: {} agent '{}' joined: {}; data path {}", options.agent.name,
                 toString(hello.role), peer, kvx::kv::describe(hello.pool),
                 path.isOk() ? *path : path.status().message());
    if (prefill) {
      prefill->onPeerReady(peer, hello.pool.blocks, hello.freeBlocks, hello.pool.shape.kvHeads);
    }
    if (decode) decode->onPeerReady(peer);
  } else {
    spdlog::warn("{}: refused '{}': {}", options.agent.name, peer, ok.message());
  }
  {
    sync::MutexLock lock(peersMutex);
    handshakes[peer] = entry;
  }
  peersChanged.notify_all();
}

void KvAgent::Impl::onPeerEvent(const PeerEvent& event) {
  auto known = kvPeers.find(event.peer);
  if (known == kvPeers.end()) return;
  const std::uint64_t said = known->second.incarnation;
  if (event.kind == PeerEvent::Kind::kLeft && (said == event.incarnation || said == 0)) {
    forgetPeer(event.peer, event.why);
  } else if (event.kind == PeerEvent::Kind::kJoined && said != event.incarnation) {
    forgetPeer(event.peer, peerFailed("peer '" + event.peer + "' restarted (new incarnation)"));
  }
}

void KvAgent::Impl::forgetPeer(const std::string& name, const Status& why) {
  // Info, not a warning: an orderly goodbye comes this way too; requests that fail because
  // of it say so themselves.
  spdlog::info("{}: peer '{}' left ({}); requests with it end", options.agent.name, name,
               why.message());
  endSession(name, why);
  sync::MutexLock lock(reconnectorMutex);
  if (reconnector && !shutDown.load()) reconnector->lost(name);
}

void KvAgent::Impl::endSession(const std::string& name, const Status& why) {
  kvPeers.erase(name);
  ownSessions.erase(name);
  port->detachPool(name);
  if (prefill) prefill->onPeerGone(name, why);
  if (decode) decode->onPeerGone(name, why);
  sync::MutexLock lock(peersMutex);
  handshakes.erase(name);
}

std::uint64_t KvAgent::Impl::ownSession(const std::string& peer) {
  auto [it, made] = ownSessions.try_emplace(peer, 0);
  if (made) it->second = ++sessionsMade;
  return it->second;
}

void KvAgent::Impl::onTick() {
  if (prefill) prefill->onTick();
  if (decode) decode->onTick();
  const std::vector<std::string> live = port->livePeers();
  std::vector<std::string> gone;
  for (const auto& [name, entry] : kvPeers) {
    if (std::find(live.begin(), live.end(), name) == live.end()) gone.push_back(name);
  }
  for (const std::string& name : gone) {
    forgetPeer(name, peerFailed("the connection to '" + name + "' was lost"));
  }
}

}  // namespace kvx
