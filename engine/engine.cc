#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <random>
#include <utility>

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
    : options_(std::move(options)), incarnation_(randomIncarnation()) {}

Result<std::unique_ptr<Engine>> Engine::create(EngineOptions options) {
  if (options.name.empty()) return invalidArgument("an agent needs a name");
  if (options.name.size() > 256) return invalidArgument("agent name longer than 256 bytes");
  std::unique_ptr<Engine> engine(new Engine(std::move(options)));
  Engine* self = engine.get();
  const EngineOptions& o = engine->options_;
  engine->options_.transportOptions.agentName = o.name;
  engine->gpu_ = o.gpuRuntime;
  if (engine->gpu_ == nullptr) {
    // The process's runtime lives until exit: share it without owning it.
    engine->gpu_ = std::shared_ptr<gpu::GpuRuntime>(&gpu::gpuRuntime(), [](gpu::GpuRuntime*) {});
  }
  engine->options_.transportOptions.gpuRuntime = engine->gpu_;
  KVX_ASSIGN_OR_RETURN(engine->transport_, createTransport(o.transport, o.transportOptions));
  Transport& transport = *engine->transport_;
  engine->gpuReach_ = gpuReachOf(transport.supportsMemoryKind(MemoryKind::kCuda),
                                 transport.whyNotMemoryKind(MemoryKind::kCuda), o.gpuPath);
  if (engine->gpuReach_.cudaDirect) engine->gpuReach_.cudaHow = transport.howMovesCuda();
  spdlog::info("{}: {}", o.name, describeGpuDirect(engine->gpuReach_));
  engine->registry_ = std::make_unique<MemoryRegistry>(transport, *engine->gpu_, o.gpuPath);
  if (engine->gpuReach_.cudaDirect) {
    // UCX copies device memory on the thread that posts or progresses, in its current context.
    transport.setThreadSetup([device = engine->registry_->directCudaDevice(), gpu = engine->gpu_] {
      const int d = device->load();
      return d >= 0 && gpu->bindThread(d).isOk();
    });
  }

  // The parts call each other through the engine: none of these hooks runs before create()
  // returns, when every part exists.
  PeerDirectory::Hooks peerHooks;
  peerHooks.failTransfers = [self](const RemotePeer& peer, const Status& why) {
    self->transfers_->failTransfersOf(peer, why);
  };
  peerHooks.unlisted = [self](const std::string& peer) {
    self->staging_->peerGone(peer);
    self->kick();
  };
  peerHooks.describe = [self](const std::string& peer) { return self->dataPathDescription(peer); };
  engine->peers_ =
      std::make_unique<PeerDirectory>(o.name, transport, o.reopenGate, std::move(peerHooks));
  engine->staging_ = std::make_unique<StagingHost>(o.name, transport, *engine->gpu_,
                                                   *engine->registry_, *engine->peers_, o.staging,
                                                   engine->gpuReach_, [self] { self->kick(); });
  engine->notifications_ = std::make_unique<NotificationRouter>(
      o.name, *engine->peers_,
      [self](const MessageHeader& header, std::span<const std::uint8_t> payload) {
        // A closing transport may still deliver, after ~Engine released the staging host.
        if (StagingHost* staging = self->staging_.get()) staging->onMessage(header, payload);
      },
      engine->progressHooks());
  TransferServiceOptions transferOptions;
  transferOptions.self = o.name;
  transferOptions.maxOpsInFlight = o.maxOpsInFlight;
  transferOptions.maxOpBytes = o.maxOpBytes;
  transferOptions.cancelGrace = o.cancelGrace;
  transferOptions.notificationHeader = engine->notifications_->header();
  engine->transfers_ = std::make_unique<TransferService>(
      std::move(transferOptions), *engine->registry_, *engine->peers_, *engine->staging_,
      engine->gpuReach_, engine->progressHooks());

  transport.setMessageHandler(
      [self](std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload) {
        self->notifications_->onMessage(header, payload);
      });
  if (!engine->callerDriven()) {
    engine->driver_ = std::make_unique<ProgressDriver>(
        transport, [self] { return self->progress(); }, o.progressSpin);
    engine->driver_->start();
  }
  return engine;
}

Engine::~Engine() {
  // A failed create() leaves some parts unmade; each step below skips what is missing.
  const Status shutdown = cancelled("the agent is shutting down");
  if (transfers_) transfers_->cancelAll(shutdown);
  // Closes every link (in-flight operations complete with errors), then stops reopening.
  if (peers_) peers_->failAll(shutdown);
  // Force-closed links completed every in-flight operation; let the transfers finish.
  if (transfers_) transfers_->waitAll(Clock::now() + std::chrono::seconds(2));
  // Copy engines wait for their running copies: no staged callback runs after this.
  if (staging_) staging_->close();
  if (driver_) driver_->stop();
  if (transfers_) transfers_->stopWaking();
  driver_.reset();
  if (transfers_) transfers_->clear();
  if (peers_) peers_->clear();
  staging_.reset();  // its window, then its staging buffers: before the transport goes
  peers_.reset();
  registry_.reset();
  transport_.reset();
  // After the transport: a transfer still pending now (its operations never completed)
  // keeps itself alive and calls its table until the transport has let go of it.
  transfers_.reset();
  notifications_.reset();  // last: the transport's message handler calls it until it is gone
}

ProgressHooks Engine::progressHooks() {
  ProgressHooks hooks;
  hooks.kick = [this] { kick(); };
  if (callerDriven()) hooks.step = [this] { return progress(); };
  return hooks;
}

bool Engine::progress() {
  bool moved = transport_->progress();
  // Staging requests the transport just delivered, and copies that finished since.
  moved = staging_->pump() || moved;
  const bool advanced = transfers_->pump();
  const bool delivered = notifications_->deliver();
  return moved || advanced || delivered;
}

// ---- memory ----

Result<RegionId> Engine::registerMemory(const MemoryRegionSpec& spec) {
  auto id = registry_->add(spec);
  if (id.isOk()) {
    spdlog::debug("{}: registered region '{}' ({} bytes, {})", name(), spec.name, spec.length,
                  toString(spec.kind));
    if (auto region = registry_->find(*id); region.isOk()) staging_->ensureWindow(**region);
  }
  return id;
}

Result<AllocatedRegion> Engine::allocateMemory(const AllocationSpec& spec) {
  auto allocated = registry_->allocate(spec);
  if (allocated.isOk()) {
    if (auto region = registry_->find(allocated->id); region.isOk()) {
      staging_->ensureWindow(**region);
    }
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
  if (const WindowServer* server = staging_->windowServer()) {
    metadata.stagingWindow = server->metadata();
  }
  return metadata;
}

Status Engine::copyIntoRegion(RegionId id, std::uint64_t offset, std::span<const std::byte> bytes,
                              Deadline deadline) {
  return engine::copyIntoRegion(
      *registry_, [this](int device) { return staging_->copyEngine(device); }, id, offset, bytes,
      deadline);
}

Status Engine::copyFromRegion(RegionId id, std::uint64_t offset, std::span<std::byte> out,
                              Deadline deadline) {
  return engine::copyFromRegion(
      *registry_, [this](int device) { return staging_->copyEngine(device); }, id, offset, out,
      deadline);
}

Status Engine::copyRegionPieces(std::span<const RegionPiece> pieces, bool into, Deadline deadline) {
  return engine::copyRegionPieces(
      *registry_, [this](int device) { return staging_->copyEngine(device); }, pieces, into,
      deadline);
}

// ---- peers ----

Status Engine::addOrUpdatePeer(PeerMetadata metadata) {
  return peers_->addOrUpdate(std::move(metadata));
}

Status Engine::updatePeer(PeerMetadata metadata) { return peers_->update(std::move(metadata)); }

Status Engine::removePeer(const std::string& peerName, Status why) {
  return peers_->remove(peerName, std::move(why));
}

Result<std::shared_ptr<RemotePeer>> Engine::peer(const std::string& peerName) const {
  return peers_->find(peerName);
}

std::vector<std::string> Engine::peerNames() const { return peers_->names(); }

Result<std::string> Engine::dataPathDescription(const std::string& peerName) const {
  KVX_ASSIGN_OR_RETURN(auto remote, peers_->find(peerName));
  return remote->dataPathDescription() + "; " + staging_->describeGpuMemory(*remote);
}

Result<bool> Engine::peerWritesDirectly(const std::string& peerName) const {
  KVX_ASSIGN_OR_RETURN(auto remote, peers_->find(peerName));
  return remote->peerWritesDirectly();
}

void Engine::setPeerEventHandler(PeerEventHandler handler) {
  peers_->setEventHandler(std::move(handler));
}

void Engine::setDataPathFailureHandler(DataPathFailureHandler handler) {
  peers_->setDataPathFailureHandler(std::move(handler));
}

// ---- transfers ----

Result<TransferId> Engine::createTransfer(const TransferRequest& request) {
  return transfers_->create(request);
}

Result<ListId> Engine::prepareLocalList(std::span<const MemoryRange> ranges) {
  return transfers_->prepareLocalList(ranges);
}

Result<ListId> Engine::prepareRemoteList(const std::string& peerName,
                                         std::span<const MemoryRange> ranges) {
  return transfers_->prepareRemoteList(peerName, ranges);
}

Result<TransferId> Engine::makeTransfer(TransferOp op, ListId localList,
                                        std::span<const std::uint32_t> localIndices,
                                        ListId remoteList,
                                        std::span<const std::uint32_t> remoteIndices,
                                        std::optional<std::string> notification) {
  return transfers_->make(op, localList, localIndices, remoteList, remoteIndices,
                          std::move(notification));
}

Status Engine::releaseList(ListId list) { return transfers_->releaseList(list); }

Status Engine::post(TransferId id, Transfer::FinishedCallback onFinished) {
  return transfers_->post(id, std::move(onFinished));
}

TransferStatus Engine::poll(TransferId id) const { return transfers_->poll(id); }

Status Engine::wait(TransferId id, Deadline deadline) { return transfers_->wait(id, deadline); }

Status Engine::cancel(TransferId id) { return cancel(std::span<const TransferId>(&id, 1)); }

Status Engine::cancel(std::span<const TransferId> ids) { return transfers_->cancel(ids); }

Result<TransferStats> Engine::stats(TransferId id) const { return transfers_->stats(id); }

Status Engine::release(TransferId id) { return transfers_->release(id); }

// ---- notifications ----

Status Engine::sendNotification(const std::string& peerName, std::string payload) {
  return notifications_->send(peerName, std::move(payload));
}

void Engine::setNotificationHandler(std::function<void(Notification)> handler) {
  notifications_->setHandler(std::move(handler));
}

Result<Notification> Engine::waitNotification(Deadline deadline) {
  return notifications_->wait(deadline);
}

void Engine::cancelNotificationWaits() { notifications_->inbox().close(); }

}  // namespace kvx::engine
