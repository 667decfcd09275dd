#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <random>
#include <utility>

#include "engine/notify/notification_header.h"
#include "engine/transport/transport_registry.h"

namespace kvx::engine {
namespace {

std::uint64_t randomIncarnation() {
  std::random_device device;
  std::uint64_t value = (std::uint64_t{device()} << 32) ^ device();
  return value == 0 ? 1 : value;
}

}  // namespace

Engine::Engine(EngineOptions options)
    : options_(std::move(options)), incarnation_(randomIncarnation()) {
  reopener_.setGate(options_.reopenGate);
}

Result<std::unique_ptr<Engine>> Engine::create(EngineOptions options) {
  if (options.name.empty()) return invalidArgument("an agent needs a name");
  if (options.name.size() > 256) return invalidArgument("agent name longer than 256 bytes");
  std::unique_ptr<Engine> engine(new Engine(std::move(options)));
  engine->options_.transportOptions.agentName = engine->options_.name;
  engine->gpu_ = engine->options_.gpuRuntime;
  if (engine->gpu_ == nullptr) {
    // The process's runtime lives until exit: share it without owning it.
    engine->gpu_ = std::shared_ptr<gpu::GpuRuntime>(&gpu::gpuRuntime(), [](gpu::GpuRuntime*) {});
  }
  engine->options_.transportOptions.gpuRuntime = engine->gpu_;
  KVX_ASSIGN_OR_RETURN(engine->transport_, createTransport(engine->options_.transport,
                                                           engine->options_.transportOptions));
  engine->gpuReach_ =
      gpuReachOf(engine->transport_->supportsMemoryKind(MemoryKind::kCuda),
                 engine->transport_->whyNotMemoryKind(MemoryKind::kCuda), engine->options_.gpuPath);
  if (engine->gpuReach_.cudaDirect) engine->gpuReach_.cudaHow = engine->transport_->howMovesCuda();
  spdlog::info("{}: {}", engine->options_.name, describeGpuDirect(engine->gpuReach_));
  engine->registry_ = std::make_unique<MemoryRegistry>(*engine->transport_, *engine->gpu_,
                                                       engine->options_.gpuPath);
  if (engine->gpuReach_.cudaDirect) {
    // UCX copies device memory on the thread that posts or progresses, in its current context.
    engine->transport_->setThreadSetup(
        [device = engine->registry_->directCudaDevice(), gpu = engine->gpu_] {
          const int d = device->load();
          return d >= 0 && gpu->bindThread(d).isOk();
        });
  }
  engine->staging_ = std::make_unique<StagingService>(*engine->transport_, *engine->gpu_,
                                                      engine->options_.staging);
  engine->notificationHeader_ = encodeNotificationHeader(engine->options_.name);
  engine->stagingReplyHeader_ =
      encodeMessageHeader(MessageKind::kStagingReply, engine->options_.name);
  engine->stagingContext_.service = engine->staging_.get();
  engine->stagingContext_.client = &engine->stagingClient_;
  engine->stagingContext_.requestHeader =
      encodeMessageHeader(MessageKind::kStagingRequest, engine->options_.name);
  engine->stagingContext_.replyTimeout = engine->options_.staging.replyTimeout;
  Engine* self = engine.get();
  engine->transport_->setMessageHandler(
      [self](std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload) {
        self->onMessage(header, payload);
      });
  if (!engine->callerDriven()) {
    engine->driver_ = std::make_unique<ProgressDriver>(
        *engine->transport_, [self] { return self->progress(); }, engine->options_.progressSpin);
    engine->driver_->start();
    ProgressDriver* driver = engine->driver_.get();
    engine->transfers_.setWake([driver] { driver->kick(); });
  }
  return engine;
}

Engine::~Engine() {
  for (auto& transfer : transfers_.all()) {
    if (transfer->pending()) {
      transfer->requestCancel(cancelled("the agent is shutting down"));
    }
  }
  std::vector<std::shared_ptr<RemotePeer>> peers;
  {
    sync::MutexLock lock(mutex_);
    for (auto& [name, peer] : peers_) peers.push_back(peer);
  }
  for (auto& peer : peers) peer->fail(cancelled("the agent is shutting down"));
  reopener_.stop();  // what it still has to reopen belongs to failed peers: it only cleans up
  // Force-closed links completed every in-flight operation; let the transfers finish.
  const Deadline deadline = Clock::now() + std::chrono::seconds(2);
  for (auto& transfer : transfers_.all()) {
    if (driver_) {
      transfers_.waitFinished(*transfer, deadline);
    } else {
      while (transfer->pending() && Clock::now() < deadline) progress();
    }
  }
  // Copy engines wait for their running copies: no staged callback runs after this.
  if (WindowServer* server = window_.load()) server->close();
  if (staging_) staging_->close();
  if (driver_) driver_->stop();
  transfers_.setWake(nullptr);  // only this thread can still complete operations now
  driver_.reset();
  {
    sync::MutexLock lock(mutex_);
    lists_.clear();
    peers_.clear();
  }
  peers.clear();
  transfers_.pump();
  for (auto& transfer : transfers_.all()) transfers_.erase(transfer->id()).ignore();
  window_.store(nullptr);
  windowOwner_.reset();  // after the copy engines closed: no copy of its slots runs
  staging_.reset();      // deregisters the staging buffers: before the transport goes
  registry_.reset();
  transport_.reset();
}

// ---- memory ----

Result<RegionId> Engine::registerMemory(const MemoryRegionSpec& spec) {
  auto id = registry_->add(spec);
  if (id.isOk()) {
    spdlog::debug("{}: registered region '{}' ({} bytes, {})", name(), spec.name, spec.length,
                  toString(spec.kind));
    if (auto region = registry_->find(*id); region.isOk()) ensureWindow(**region);
  }
  return id;
}

Result<AllocatedRegion> Engine::allocateMemory(const AllocationSpec& spec) {
  auto allocated = registry_->allocate(spec);
  if (allocated.isOk()) {
    if (auto region = registry_->find(allocated->id); region.isOk()) ensureWindow(**region);
  }
  return allocated;
}

Status Engine::deregisterMemory(RegionId id) { return registry_->remove(id); }

Result<RegionInfo> Engine::regionInfo(RegionId id) const {
  KVX_ASSIGN_OR_RETURN(auto region, registry_->find(id));
  return region->info;
}

PeerMetadata Engine::localMetadata() const {
  PeerMetadata metadata;
  metadata.name = options_.name;
  metadata.incarnation = incarnation_;
  metadata.transport = std::string(transport_->name());
  metadata.dataAddress = transport_->localAddress();
  for (const auto& region : registry_->exposedRegions()) {
    auto key = region->memory->packedRemoteKey();
    metadata.regions.push_back(RegionMetadata{region->info, {key.begin(), key.end()}});
  }
  if (const WindowServer* server = window_.load()) metadata.stagingWindow = server->metadata();
  return metadata;
}

// ---- peers ----

Status Engine::addOrUpdatePeer(PeerMetadata metadata) {
  if (metadata.name == options_.name) {
    return invalidArgument("peer metadata carries this agent's own name '" + metadata.name + "'");
  }
  if (metadata.transport != transport_->name()) {
    return invalidArgument("peer '" + metadata.name + "' uses transport '" + metadata.transport +
                           "' but this agent uses '" + std::string(transport_->name()) + "'");
  }
  std::shared_ptr<RemotePeer> known;
  {
    sync::MutexLock lock(mutex_);
    auto it = peers_.find(metadata.name);
    if (it != peers_.end()) known = it->second;
  }
  if (known && known->removalClaimed()) {
    // Being removed (its link closing): wait until it is gone, then connect afresh.
    (void)removePeerIf(metadata.name, known->incarnation(), peerFailed("removed"));
    known.reset();
  }
  if (known && known->incarnation() == metadata.incarnation) {
    known->updateRegions(metadata.regions);
    known->updateStagingWindow(metadata.stagingWindow);
    return Status::ok();
  }
  const Status restarted = peerFailed("peer '" + metadata.name + "' restarted (new incarnation)");
  if (known) {
    const Status removed = removePeerIf(metadata.name, known->incarnation(), restarted);
    // Gone meanwhile, or replaced by another handshake: the insertion below sorts it out.
    if (!removed.isOk() && removed.code() != StatusCode::kNotFound &&
        removed.code() != StatusCode::kFailedPrecondition) {
      return removed;
    }
  }
  const std::string peerName = metadata.name;
  const std::uint64_t incarnation = metadata.incarnation;
  const std::vector<RegionMetadata> regions = metadata.regions;
  const StagingWindowMetadata window = metadata.stagingWindow;
  KVX_ASSIGN_OR_RETURN(auto peer, RemotePeer::connect(
                                      *transport_, std::move(metadata),
                                      [this, peerName, incarnation](const Status& why) {
                                        onDataPathFailed(peerName, incarnation, why);
                                      },
                                      RemotePeer::kReopenWait + options_.reopenGate.longest));
  std::shared_ptr<RemotePeer> redundant;  // closed outside the lock
  bool joined = true;
  for (int attempt = 0;; ++attempt) {
    std::uint64_t other = 0;
    {
      sync::MutexLock lock(mutex_);
      auto [it, inserted] = peers_.try_emplace(peerName, peer);
      if (inserted) break;
      if (it->second->incarnation() == incarnation) {
        // Another handshake with the same peer (both agents connected to each other) won
        // the race: keep its peer object, so transfers already made against it stay valid.
        it->second->updateRegions(regions);
        it->second->updateStagingWindow(window);
        redundant = std::move(peer);
        joined = false;
        break;
      }
      other = it->second->incarnation();
    }
    // Another incarnation got in meanwhile: close its link before taking its place (never
    // two links to one name, and never a new one listed while the old one can still land).
    if (attempt == 3) {
      peer->fail(restarted);
      return failedPrecondition("peer '" + peerName +
                                "' kept changing incarnation while it connected; connect again");
    }
    const Status removed = removePeerIf(peerName, other, restarted);
    (void)removed;  // whatever happened, look again
  }
  if (joined) {
    if (auto path = dataPathDescription(peerName); path.isOk()) {
      spdlog::info("{}: data path to peer '{}': {}", name(), peerName, *path);
    }
    emitPeerEvent(PeerEvent::Kind::kJoined, peerName, incarnation, Status::ok());
  }
  return Status::ok();
}

void Engine::setPeerEventHandler(PeerEventHandler handler) {
  sync::MutexLock lock(peerEventMutex_);
  peerEventHandler_ =
      handler ? std::make_shared<const PeerEventHandler>(std::move(handler)) : nullptr;
}

void Engine::setDataPathFailureHandler(DataPathFailureHandler handler) {
  sync::MutexLock lock(peerEventMutex_);
  dataPathFailureHandler_ =
      handler ? std::make_shared<const DataPathFailureHandler>(std::move(handler)) : nullptr;
}

void Engine::onDataPathFailed(const std::string& peerName, std::uint64_t incarnation,
                              const Status& why) {
  // The endpoint is gone for good: its operations in flight may never complete (UCX does not
  // always complete them after a keepalive timeout over tcp), and neither transfers nor
  // notifications can reach the peer through it. Failing the peer closes the link, which
  // fails those operations now.
  const Status failure =
      peerFailed("data path to peer '" + peerName + "' failed: " + why.message());
  if (!removePeerIf(peerName, incarnation, failure).isOk()) return;  // gone or replaced already
  std::shared_ptr<const DataPathFailureHandler> handler;
  {
    sync::MutexLock lock(peerEventMutex_);
    handler = dataPathFailureHandler_;
  }
  if (handler) (*handler)(peerName, failure);
}

void Engine::emitPeerEvent(PeerEvent::Kind kind, const std::string& peer, std::uint64_t incarnation,
                           Status why) {
  std::shared_ptr<const PeerEventHandler> handler;
  {
    sync::MutexLock lock(peerEventMutex_);
    handler = peerEventHandler_;
  }
  if (handler) (*handler)(PeerEvent{kind, peer, incarnation, std::move(why)});
}

Status Engine::updatePeer(PeerMetadata metadata) {
  KVX_ASSIGN_OR_RETURN(auto known, peer(metadata.name));
  if (known->incarnation() != metadata.incarnation) {
    return failedPrecondition("stale metadata for peer '" + metadata.name + "': incarnation " +
                              std::to_string(metadata.incarnation) + ", but incarnation " +
                              std::to_string(known->incarnation()) + " is connected");
  }
  KVX_RETURN_IF_ERROR(known->checkKeys(metadata.regions, metadata.stagingWindow)
                          .withContext("metadata update from peer '" + metadata.name + "'"));
  known->updateRegions(metadata.regions);
  known->updateStagingWindow(metadata.stagingWindow);
  return Status::ok();
}

void Engine::failTransfersOf(const RemotePeer& peer, const Status& why) {
  for (auto& transfer : transfers_.all()) {
    if (transfer->peer().get() == &peer && transfer->pending()) transfer->requestCancel(why);
  }
}

Status Engine::removePeer(const std::string& peerName, Status why) {
  return removePeerIf(peerName, std::nullopt, std::move(why));
}

Status Engine::removePeerIf(const std::string& peerName, std::optional<std::uint64_t> incarnation,
                            Status why) {
  std::shared_ptr<RemotePeer> peer;
  {
    sync::UniqueLock lock(mutex_);
    auto it = peers_.find(peerName);
    if (it == peers_.end()) return notFound("unknown peer '" + peerName + "'");
    if (incarnation && it->second->incarnation() != *incarnation) {
      return failedPrecondition("peer '" + peerName + "' is another incarnation now");
    }
    peer = it->second;
    if (!peer->claimRemoval()) {
      // Another thread is closing its link: it is gone once that thread unlisted it.
      peerUnlisted_.wait_for(lock.native(), kRemovalWait, [&]() KVX_REQUIRES(mutex_) {
        auto now = peers_.find(peerName);
        return now == peers_.end() || now->second != peer;
      });
      return notFound("peer '" + peerName + "' was removed meanwhile");
    }
  }
  failTransfersOf(*peer, why);
  peer->fail(why);  // force-closes the link: in-flight operations complete with errors now
  {
    sync::MutexLock lock(mutex_);
    auto it = peers_.find(peerName);
    if (it != peers_.end() && it->second == peer) peers_.erase(it);
  }
  peerUnlisted_.notify_all();
  // Its idle window slots and waiting requests go; copies running for it finish unanswered.
  if (WindowServer* server = window_.load()) server->peerGone(peerName);
  if (driver_) driver_->kick();
  spdlog::info("{}: peer '{}' removed: {}", name(), peerName, why.toString());
  emitPeerEvent(PeerEvent::Kind::kLeft, peerName, peer->incarnation(), std::move(why));
  return Status::ok();
}

Result<std::shared_ptr<RemotePeer>> Engine::peer(const std::string& peerName) const {
  sync::MutexLock lock(mutex_);
  auto it = peers_.find(peerName);
  if (it == peers_.end()) return notFound("unknown peer '" + peerName + "'");
  return it->second;
}

std::vector<std::string> Engine::peerNames() const {
  sync::MutexLock lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [n, p] : peers_) names.push_back(n);
  return names;
}

// ---- notifications ----

Status Engine::sendNotification(const std::string& peerName, std::string payload) {
  KVX_ASSIGN_OR_RETURN(auto remote, peer(peerName));
  // During a reset of the link it waits for the next link, not the caller.
  KVX_RETURN_IF_ERROR(remote->sendOwned(notificationHeader_, {payload.begin(), payload.end()},
                                        "notification to '" + peerName + "'"));
  if (driver_) driver_->kick();
  return Status::ok();
}

void Engine::onMessage(std::span<const std::uint8_t> header,
                       std::span<const std::uint8_t> payload) {
  auto decoded = decodeMessageHeader(header);
  if (!decoded.isOk()) {
    spdlog::warn("{}: dropped a data-path message: {}", name(), decoded.status().toString());
    return;
  }
  if (decoded->kind != MessageKind::kNotification) {
    onStagingMessage(*decoded, payload);
    return;
  }
  inbox_.push(
      Notification{std::move(decoded->sender),
                   std::string(reinterpret_cast<const char*>(payload.data()), payload.size())});
}

Result<Notification> Engine::waitNotification(Deadline deadline) {
  if (!callerDriven()) return inbox_.waitTake(deadline);
  while (true) {
    if (auto n = inbox_.tryTake()) return std::move(*n);
    if (Clock::now() >= deadline) return timedOut("no notification arrived before the deadline");
    progress();
  }
}

bool Engine::progress() {
  bool moved = transport_->progress();
  // Staging requests the transport just delivered, and copies that finished since.
  if (WindowServer* server = window_.load()) moved = server->pump() || moved;
  stagingClient_.tick(Clock::now());
  releaseOrphanedSlots();
  const bool advanced = transfers_.pump();
  const bool delivered = hasHandler_.load(std::memory_order_relaxed) && deliverNotifications();
  return moved || advanced || delivered;
}

void Engine::setNotificationHandler(std::function<void(Notification)> handler) {
  sync::MutexLock lock(handlerMutex_);
  handler_ = handler ? std::make_shared<const std::function<void(Notification)>>(std::move(handler))
                     : nullptr;
  hasHandler_.store(handler_ != nullptr);
  if (driver_) driver_->kick();  // hands over what is already queued
}

bool Engine::deliverNotifications() {
  std::shared_ptr<const std::function<void(Notification)>> handler;
  {
    sync::MutexLock lock(handlerMutex_);
    handler = handler_;
  }
  if (!handler) return false;
  bool any = false;
  while (auto notification = inbox_.tryTake()) {
    (*handler)(std::move(*notification));
    any = true;
  }
  return any;
}

}  // namespace kvx::engine
