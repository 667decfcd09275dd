#include "engine/staged/staging_host.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "engine/memory/staged_only_memory.h"
#include "engine/staged/staged_run.h"
#include "engine/staged/staging_message.h"
#include "engine/staged/staging_window.h"
#include "engine/transport/owned_message.h"

namespace kvx::engine {

StagingHost::StagingHost(std::string self, Transport& transport, gpu::GpuRuntime& gpu,
                         MemoryRegistry& registry, PeerDirectory& peers, StagingOptions options,
                         GpuReach reach, std::function<void()> wake)
    : self_(std::move(self)),
      transport_(transport),
      gpu_(gpu),
      registry_(registry),
      peers_(peers),
      options_(std::move(options)),
      reach_(std::move(reach)),
      wake_(std::move(wake)),
      replyHeader_(encodeMessageHeader(MessageKind::kStagingReply, self_)),
      service_(transport, gpu, options_) {
  context_.service = &service_;
  context_.client = &client_;
  context_.requestHeader = encodeMessageHeader(MessageKind::kStagingRequest, self_);
  context_.replyTimeout = options_.replyTimeout;
}

StagingHost::~StagingHost() {
  close();
  window_.store(nullptr);
  sync::MutexLock lock(windowMutex_);
  windowOwner_.reset();  // after the copy engines closed: no copy of its slots runs
}

Status StagingHost::prepare(const TransferPlan& plan) {
  if (!plan.remoteStagedOps.empty() || !plan.bothStagedOps.empty()) {
    spdlog::debug("{}: transfer stages {} bytes through the peer's staging window{}", self_,
                  plan.remoteStagedBytes,
                  plan.bothStagedOps.empty() ? "" : " (staged through host on both sides)");
  }
  if (plan.stagedOps.empty() && plan.bothStagedOps.empty()) return Status::ok();
  return service_.prepare(plan.stagedDevice)
      .withContext("planning a transfer that stages " + std::to_string(plan.stagedBytes) +
                   " bytes of CUDA device " + std::to_string(plan.stagedDevice) +
                   " through host memory (" + describeGpuDirect(reach_) + ")");
}

Result<std::unique_ptr<StagedShare>> StagingHost::localShare(const TransferPlan& plan,
                                                             TransferOp op,
                                                             std::shared_ptr<PeerLink> link,
                                                             std::vector<const RemoteKey*> keys,
                                                             std::function<void()> notify) {
  KVX_ASSIGN_OR_RETURN(auto run, StagedRun::create(service_, plan, op, std::move(link),
                                                   std::move(keys), std::move(notify)));
  return std::unique_ptr<StagedShare>(std::move(run));
}

Result<std::unique_ptr<StagedShare>> StagingHost::windowShare(const TransferPlan& plan,
                                                              TransferOp op,
                                                              std::shared_ptr<RemotePeer> peer,
                                                              std::shared_ptr<PeerLink> link,
                                                              std::function<void()> notify) {
  KVX_ASSIGN_OR_RETURN(auto run, RemoteStagedRun::create(context_, plan, op, std::move(peer),
                                                         std::move(link), std::move(notify)));
  return std::unique_ptr<StagedShare>(std::move(run));
}

void StagingHost::ensureWindow(const LocalRegion& region) {
  if (region.info.kind != MemoryKind::kCuda || !region.info.exposed ||
      !region.memory->packedRemoteKey().empty() || window_.load() != nullptr) {
    return;
  }
  sync::MutexLock lock(windowMutex_);
  if (windowOwner_ != nullptr) return;
  const std::size_t slotBytes =
      options_.windowSlotBytes != 0 ? options_.windowSlotBytes : options_.chunkBytes;
  Result<std::unique_ptr<StagingWindow>> window =
      StagingWindow::create(transport_, gpu_, options_.windowSlots, slotBytes);
  if (!window.isOk()) {
    spdlog::warn("{}: no staging window, so peers cannot reach GPU region '{}': {}", self_,
                 region.info.name, window.status().toString());
    return;
  }
  const std::string layout = (*window)->layout();
  windowOwner_ = std::make_unique<WindowServer>(
      std::move(window).value(), registry_, service_,
      [this](const std::string& peer, std::vector<std::uint8_t> payload) {
        send(peer, replyHeader_, std::move(payload), "staging reply to '" + peer + "'");
      },
      wake_);
  window_.store(windowOwner_.get());
  spdlog::info("{}: staging window of {} x {} bytes, {}, for peers to reach GPU memory ({})", self_,
               options_.windowSlots, slotBytes, layout, describeGpuDirect(reach_));
}

void StagingHost::onMessage(const MessageHeader& header, std::span<const std::uint8_t> payload) {
  if (header.kind == MessageKind::kStagingRequest) {
    WindowServer* server = window_.load();
    if (server == nullptr) {
      spdlog::warn("{}: dropped a staging request from '{}': this agent has no staging window",
                   self_, header.sender);
      return;
    }
    server->onRequest(header.sender, payload);
    return;
  }
  auto reply = decodeStagingReply(payload);
  if (!reply.isOk()) {
    spdlog::warn("{}: dropped a staging reply from '{}': {}", self_, header.sender,
                 reply.status().toString());
    return;
  }
  if (!client_.route(header.sender, *reply)) {
    spdlog::debug("{}: staging reply {} from '{}' matches no staged move in flight", self_,
                  reply->requestId, header.sender);
  }
}

bool StagingHost::pump() {
  // Staging requests the transport just delivered, and copies that finished since.
  bool moved = false;
  if (WindowServer* server = window_.load()) moved = server->pump();
  client_.tick(Clock::now());
  releaseOrphanedSlots();
  return moved;
}

void StagingHost::peerGone(const std::string& peer) {
  if (WindowServer* server = window_.load()) server->peerGone(peer);
}

std::string StagingHost::describeGpuMemory(const RemotePeer& peer) const {
  GpuMemorySides sides;
  sides.reach = reach_;
  for (const auto& region : registry_.regions()) {
    if (region->info.kind != MemoryKind::kCuda) continue;
    const bool staged = dynamic_cast<const StagedOnlyMemory*>(region->memory.get()) != nullptr;
    ++(staged ? sides.localStaged : sides.localDirect);
  }
  for (const RegionInfo& info : peer.regions()) {
    if (info.kind != MemoryKind::kCuda) continue;
    auto region = peer.resolve(MemoryRange{info.id, 0, info.length}, 0, "remote");
    if (!region.isOk()) continue;  // withdrawn meanwhile
    ++((*region)->packedKey.empty() ? sides.peerUnkeyed : sides.peerKeyed);
  }
  sides.peerWindow = peer.stagingWindow() != nullptr;
  return engine::describeGpuMemory(sides);
}

void StagingHost::close() {
  // The server ignores what completes from here on; closing the copy engines then waits for
  // the copies it started.
  if (WindowServer* server = window_.load()) server->close();
  service_.close();
}

void StagingHost::send(const std::string& peer, const std::vector<std::uint8_t>& header,
                       std::vector<std::uint8_t> payload, std::string what) {
  auto remote = peers_.find(peer);
  if (!remote.isOk()) return;  // gone: nothing waits for the message any more
  auto link = (*remote)->link();
  if (!link.isOk()) return;
  sendOwnedMessage((*link)->endpoint(), header, std::move(payload), std::move(what));
}

void StagingHost::releaseOrphanedSlots() {
  for (auto& [peer, release] : client_.takeOrphans()) {
    send(peer, context_.requestHeader, encodeStagingRequest(release),
         "release of staging slot " + std::to_string(release.slot) + " to '" + peer + "'");
  }
}

}  // namespace kvx::engine
