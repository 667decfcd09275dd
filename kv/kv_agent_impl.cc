#include "kv/kv_agent_impl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "kv/handoff/kv_agent_info.h"

namespace kvx {

using namespace kv::handoff;

Result<std::unique_ptr<KvAgent::Impl>> KvAgent::Impl::create(KvAgentOptions options) {
  if (options.prefixChunkTokens == 0) {
    return invalidArgument("prefixChunkTokens must be > 0");
  }
  if (!options.agent.applicationInfo.empty()) {
    return invalidArgument(
        "agent.applicationInfo is the KV agent's own (its role and pool, for peers); leave it "
        "empty");
  }
  {
    // Peers learn this agent's role and pool from its metadata: known before it exists.
    KVX_ASSIGN_OR_RETURN(const kv::PoolLayout layout, kv::KvPool::layoutOf(options.pool));
    KvAgentInfo info{options.role,    options.defaultMode, layout.shape(),
                     layout.layout(), layout.blocks(),     {},
                     thisProcess()};
    for (std::uint32_t t = 0; t < layout.tensorCount(); ++t) {
      info.regionNames.push_back(kv::KvPool::regionName(t));
    }
    options.agent.applicationInfo = encodeKvAgentInfo(info);
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  KVX_ASSIGN_OR_RETURN(impl->agent, Agent::create(options.agent));
  KVX_ASSIGN_OR_RETURN(impl->local, kv::LocalPool::create(*impl->agent, options));
  impl->sides = std::make_unique<kv::KvSides>(options, impl->local, impl->service->poster());
  Impl* self = impl.get();
  impl->service->start(std::chrono::milliseconds(50), [self] { self->onTick(); });
  auto post = impl->service->poster();
  // Messages arrive on the engine's progress thread. Those that post no move are handled
  // right there when the service loop is idle (no hand-over to its thread: on a small
  // request's path that is the placement, the data's arrival and the confirmation); the
  // rest, and any that find the loop busy, are posted to it.
  auto run = impl->service->runner();
  impl->agent->setNotificationHandler([post, run, self](Notification n) {
    auto message = kvx::kv::handoff::decode(n.payload);
    if (!message.isOk()) {
      spdlog::warn("{}: dropped a message from '{}': {}", self->options.agent.name, n.peer,
                   message.status().toString());
      return;
    }
    const bool light = kv::KvSides::postsNoMove(*message);
    auto task = [self, peer = std::move(n.peer), m = std::move(message).value()]() mutable {
      self->onMessage(peer, std::move(m));
    };
    if (light) {
      run(std::move(task));
    } else {
      post(std::move(task));
    }
  });
  impl->agent->setPeerEventHandler(
      [post, self](const PeerEvent& event) { post([self, event] { self->onPeerEvent(event); }); });
  if (options.reconnect) {
    kv::ReconnectPolicy policy;
    policy.maxDelay = std::max(options.reconnectMaxDelay, policy.firstDelay);
    policy.attemptTimeout = options.reconnectAttemptTimeout;
    impl->reconnector = std::make_unique<kv::PeerReconnector>(
        options.agent.name, policy,
        [self](const std::string& address, Deadline deadline) {
          return self->connect(address, deadline);
        },
        [self](const std::string& peer) { return self->peers.compatible(peer); });
  }
  const KvPoolInfo& pool = impl->local.pool->info();
  spdlog::info("{}: {} agent on {}, pool {} ({} MiB, {} tensors)", options.agent.name,
               toString(options.role), impl->agent->listenAddress(),
               kvx::kv::describe(impl->local.pool->description()),
               pool.blockBytes * pool.blocks >> 20, pool.tensors);
  return impl;
}

KvAgent::Impl::~Impl() {
  if (service->started()) {
    (void)shutdown(deadlineIn(std::chrono::seconds(2)), "the agent is being destroyed",
                   /*applicationGone=*/true);
  }
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
  service.reset();  // closed, then its thread stopped
  local.port.reset();
  sides.reset();
  local.canary.reset();
  local.allocator.reset();
  local.pool.reset();
  agent.reset();
}

Status KvAgent::Impl::shutdown(Deadline deadline, const std::string& reason, bool applicationGone) {
  if (shutDown.exchange(true)) return Status::ok();
  accepting.store(false);
  if (reconnector) reconnector->stop();
  peers.wakeAll();  // a connect() waiting for a handshake sees shutDown
  (void)callStatus([this] {
    sides->stopAccepting();
    return Status::ok();
  });
  // Being destroyed, the agent waits only for requests the transport and the peers can take
  // further: one handed out, or waiting for layers, ends at once (and so does one that gets
  // there while we wait).
  auto live = [this, applicationGone, &reason] {
    return call<std::size_t>([this, applicationGone, &reason]() -> Result<std::size_t> {
      if (applicationGone) sides->endApplicationWaits(cancelled(reason));
      return sides->liveRequests();
    });
  };
  auto wait = [&](Deadline until) {
    while (Clock::now() < until) {
      auto n = live();
      if (n.isOk() && *n == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  if (!wait(deadline)) {
    (void)callStatus([this, reason] {
      sides->failAll(cancelled(reason));
      return Status::ok();
    });
    // Failure paths drain moves and wait for acknowledgements; give them a bounded while.
    if (!wait(std::max(deadline, Clock::now()) + std::chrono::seconds(1))) {
      spdlog::warn("{}: {} requests still live at shutdown", options.agent.name, live().valueOr(0));
    }
  }
  // Blocks still held for lost PUSH peers go back now; with a canary, every free block is
  // checked once more: a late write into a block never handed out again shows here.
  (void)callStatus([this] {
    sides->releaseAllAndCheck();
    return Status::ok();
  });
  // Nothing arrives any more: a nextArrival() waiting (or called later) returns at once.
  sides->board().close(cancelled("the agent is shut down (" + reason + ")"));
  return Status::ok();
}

Result<std::string> KvAgent::Impl::connect(const std::string& address, Deadline deadline) {
  constexpr auto kSlice = std::chrono::milliseconds(200);
  if (shutDown.load()) return failedPrecondition("the KV agent is shut down");
  if (Clock::now() >= deadline) {
    return timedOut("connecting to " + address + ": the deadline passed before the call");
  }
  const auto started = Clock::now();
  KVX_ASSIGN_OR_RETURN(std::string peer, agent->connect(address, deadline));
  auto info = agent->peerInfo(peer);
  if (!info.isOk()) {
    return info.status().withContext("agent '" + peer + "' at " + address +
                                     " left right after the handshake");
  }
  // The join event of this handshake (or of an earlier one, if the peer was connected
  // already) is on its way to the service thread, which takes the peer in; a peer refused
  // before is looked at once more, since a peer that was still starting may be complete now.
  if (auto known = peers.find(peer);
      known && known->incarnation == info->incarnation && !known->compatible) {
    service->post([this, peer, incarnation = info->incarnation] { onJoined(peer, incarnation); });
  }
  // In slices: a peer the engine dropped meanwhile (its data path failed) is reported within
  // a slice, with the reason the engine's directory keeps, whatever became of its events.
  auto entry =
      peers.waitFor(peer, info->incarnation, std::min(deadline, Clock::now() + kSlice), shutDown);
  while (!entry.isOk() && entry.status().code() == StatusCode::kTimedOut &&
         Clock::now() < deadline) {
    auto still = agent->peerInfo(peer);
    if (!still.isOk() || still->incarnation != info->incarnation) {
      return (still.isOk() ? peerFailed("it restarted") : still.status())
          .withContext("agent '" + peer + "' at " + address + " left right after the handshake");
    }
    entry =
        peers.waitFor(peer, info->incarnation, std::min(deadline, Clock::now() + kSlice), shutDown);
  }
  if (!entry.isOk()) {
    if (entry.status().code() != StatusCode::kTimedOut) {
      return entry.status().withContext("agent '" + peer + "' at " + address);
    }
    return timedOut(
        "agent '" + peer + "' at " + address + " connected, but this agent's KV " +
        "service thread did not take it in within " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count()) +
        " ms (is it busy?); it will when it can");
  }
  if (!entry->compatible) return failedPrecondition(entry->reason);
  if (reconnector) reconnector->watch(peer, address);
  return peer;
}

void KvAgent::Impl::onMessage(const std::string& peer, kv::handoff::KvMessage message) {
  const std::optional<kv::KvPeer> known = peers.find(peer);
  if (!known) {
    // Sent by a peer that took us in before our own join event for it arrived: it waits
    // for that event (early_messages.h).
    if (!early.hold(peer, std::move(message), Clock::now())) {
      spdlog::warn(
          "{}: dropped a KV message from '{}', which has not joined, and too many "
          "of its messages are waiting for it to",
          options.agent.name, peer);
    }
    return;
  }
  if (!known->compatible) {
    spdlog::warn("{}: dropped a KV message from '{}', which is not a compatible KV peer",
                 options.agent.name, peer);
    return;
  }
  deliver(peer, message);
}

void KvAgent::Impl::deliver(const std::string& peer, const kv::handoff::KvMessage& message) {
  sides->onMessage(peer, message);
}

void KvAgent::Impl::onJoined(const std::string& peer, std::uint64_t incarnation) {
  auto info = agent->peerInfo(peer);
  if (!info.isOk() || info->incarnation != incarnation) {
    // Gone again, or restarted: the events of what followed are queued behind this one.
    return;
  }
  if (auto known = peers.find(peer); known && known->incarnation == incarnation) {
    if (known->compatible) return;  // taken in already
    // Refused before (a connect looks again: a peer that was still starting may be complete
    // now); the sides never knew it.
    local.port->detachPool(peer);
  }
  kv::KvPeer entry;
  entry.incarnation = incarnation;
  const Result<kv::PoolDescription> remotePool = admit(*info, entry);
  Status ok = remotePool.status();
  if (ok.isOk()) {
    // Only the side that will initiate moves readies the other's memory now: a prefill agent
    // pushes by default, a decode agent pulls only from a prefill agent that says it pulls.
    const bool initiates = options.role == KvRole::kPrefill ? options.defaultMode == KvMode::kPush
                                                            : entry.mode == KvMode::kPull;
    ok = local.port->attachPool(peer, *remotePool, initiates);
  }
  entry.compatible = ok.isOk();
  entry.reason = ok.isOk() ? "" : ok.message();
  if (ok.isOk()) {
    auto path = agent->dataPathDescription(peer);
    spdlog::info("{}: {} agent '{}' joined: {}; data path {}", options.agent.name,
                 toString(entry.role), peer, kvx::kv::describe(*remotePool),
                 path.isOk() ? *path : path.status().message());
    sides->onPeerReady(peer, entry, writerOf(peer, entry));
  } else {
    spdlog::warn("{}: refused '{}': {}", options.agent.name, peer, ok.message());
  }
  const bool compatible = entry.compatible;
  peers.record(peer, std::move(entry));
  std::vector<kv::handoff::KvMessage> waiting = early.take(peer);
  if (!compatible && !waiting.empty()) {
    spdlog::warn("{}: dropped {} KV messages from '{}', which is not a compatible KV peer",
                 options.agent.name, waiting.size(), peer);
    return;
  }
  for (const kv::handoff::KvMessage& message : waiting) deliver(peer, message);
}

kv::handoff::PeerWriter KvAgent::Impl::writerOf(const std::string& peer,
                                                const kv::KvPeer& entry) const {
  kv::handoff::PeerWriter writer;
  writer.incarnation = entry.incarnation;
  // Not knowing is taken as writing directly: its blocks then wait for proof.
  auto direct = agent->peerWritesDirectly(peer);
  writer.writesDirectly = !direct.isOk() || *direct;
  if (!writer.writesDirectly) return writer;
  auto watch = watchProcess(entry.process);
  if (watch.isOk()) {
    writer.processEnded = [w = *watch] { return w->ended(); };
    writer.process = "pid " + std::to_string(entry.process.pid);
  } else if (watch.status().code() == StatusCode::kNotFound) {
    // Of this host and pid namespace, and gone already since it joined.
    writer.processEnded = [] { return true; };
    writer.process = "pid " + std::to_string(entry.process.pid) + ", which has ended";
  } else {
    writer.process = "its process cannot be watched: " + watch.status().message();
  }
  return writer;
}

Result<kv::PoolDescription> KvAgent::Impl::admit(const PeerInfo& info, kv::KvPeer& entry) const {
  auto kvInfo = decodeKvAgentInfo(info.applicationInfo);
  if (!kvInfo.isOk()) {
    return failedPrecondition("'" + info.name + "' is not a kvx KV agent, or not one this " +
                              "agent can work with: " + kvInfo.status().message());
  }
  entry.role = kvInfo->role;
  entry.mode = kvInfo->mode;
  entry.totalBlocks = kvInfo->blocks;
  entry.kvHeads = kvInfo->shape.kvHeads;
  entry.process = kvInfo->process;
  KVX_ASSIGN_OR_RETURN(kv::PoolDescription remote, resolvePool(*kvInfo, info));
  KVX_RETURN_IF_ERROR(kvx::kv::checkSliceCompatible(local.pool->description(), remote));
  if (kvInfo->role == options.role) {
    return failedPrecondition("both agents are " + std::string(toString(options.role)) +
                              " agents; a KV hand-off needs a prefill and a decode agent");
  }
  return remote;
}

void KvAgent::Impl::onPeerEvent(const PeerEvent& event) {
  auto known = peers.find(event.peer);
  if (event.kind == PeerEvent::Kind::kLeft) {
    if (known && known->incarnation == event.incarnation) {
      forgetPeer(event.peer, event.why);
    } else if (!known) {
      (void)early.take(event.peer);  // it left before this agent took it in
    }
    return;
  }
  if (known && known->incarnation != event.incarnation) {
    forgetPeer(event.peer, peerFailed("peer '" + event.peer + "' restarted (new incarnation)"));
  }
  onJoined(event.peer, event.incarnation);
}

void KvAgent::Impl::forgetPeer(const std::string& name, const Status& why) {
  // Info, not a warning: an orderly goodbye comes this way too; requests that fail because
  // of it say so themselves.
  spdlog::info("{}: peer '{}' left ({}); requests with it end", options.agent.name, name,
               why.message());
  peers.forget(name);
  (void)early.take(name);  // none may wait for a later session
  local.port->detachPool(name);
  sides->onPeerGone(name, why);
  sync::MutexLock lock(reconnectorMutex);
  if (reconnector && !shutDown.load()) reconnector->lost(name);
}

void KvAgent::Impl::onTick() {
  sides->onTick();
  for (const auto& [peer, count] : early.expire(Clock::now())) {
    spdlog::warn("{}: dropped {} KV messages from '{}', which did not join within {} s",
                 options.agent.name, count, peer, kv::EarlyMessages::kHoldFor.count());
  }
}

}  // namespace kvx
