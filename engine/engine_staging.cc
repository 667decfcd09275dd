// Engine: GPU memory outside the transfer path: target-side staging (the staging window
// peers reach this agent's GPU memory through), the routing of staging messages, host
// copies into and out of regions, and the description of how GPU memory moves per peer.
#include <spdlog/spdlog.h>

#include "engine/engine.h"
#include "engine/memory/region_copy.h"
#include "engine/memory/staged_only_memory.h"
#include "engine/transport/owned_message.h"

namespace kvx::engine {

void Engine::ensureWindow(const LocalRegion& region) {
  if (region.info.kind != MemoryKind::kCuda || !region.info.exposed ||
      !region.memory->packedRemoteKey().empty() || window_.load() != nullptr) {
    return;
  }
  sync::MutexLock lock(windowMutex_);
  if (windowOwner_ != nullptr) return;
  const StagingOptions& options = options_.staging;
  const std::size_t slotBytes =
      options.windowSlotBytes != 0 ? options.windowSlotBytes : options.chunkBytes;
  Result<std::unique_ptr<StagingWindow>> window =
      StagingWindow::create(*transport_, *gpu_, options.windowSlots, slotBytes);
  if (!window.isOk()) {
    spdlog::warn("{}: no staging window, so peers cannot reach GPU region '{}': {}", name(),
                 region.info.name, window.status().toString());
    return;
  }
  const std::string layout = (*window)->layout();
  ProgressDriver* driver = driver_.get();
  windowOwner_ = std::make_unique<WindowServer>(
      std::move(window).value(), *registry_, *staging_,
      [this](const std::string& peer, std::vector<std::uint8_t> payload) {
        sendStagingReply(peer, std::move(payload));
      },
      [driver] {
        if (driver != nullptr) driver->kick();
      });
  window_.store(windowOwner_.get());
  spdlog::info("{}: staging window of {} x {} bytes, {}, for peers to reach GPU memory ({})",
               name(), options.windowSlots, slotBytes, layout, describeGpuDirect(gpuReach_));
}

void Engine::onStagingMessage(const MessageHeader& header, std::span<const std::uint8_t> payload) {
  if (header.kind == MessageKind::kStagingRequest) {
    WindowServer* server = window_.load();
    if (server == nullptr) {
      spdlog::warn("{}: dropped a staging request from '{}': this agent has no staging window",
                   name(), header.sender);
      return;
    }
    server->onRequest(header.sender, payload);
    return;
  }
  auto reply = decodeStagingReply(payload);
  if (!reply.isOk()) {
    spdlog::warn("{}: dropped a staging reply from '{}': {}", name(), header.sender,
                 reply.status().toString());
    return;
  }
  if (!stagingClient_.route(header.sender, *reply)) {
    spdlog::debug("{}: staging reply {} from '{}' matches no staged move in flight", name(),
                  reply->requestId, header.sender);
  }
}

void Engine::releaseOrphanedSlots() {
  for (auto& [peerName, release] : stagingClient_.takeOrphans()) {
    auto remote = peer(peerName);
    if (!remote.isOk()) continue;
    auto link = (*remote)->link();
    if (!link.isOk()) continue;
    sendOwnedMessage(
        (*link)->endpoint(), stagingContext_.requestHeader, encodeStagingRequest(release),
        "release of staging slot " + std::to_string(release.slot) + " to '" + peerName + "'");
  }
}

void Engine::sendStagingReply(const std::string& peerName, std::vector<std::uint8_t> payload) {
  auto remote = peer(peerName);
  if (!remote.isOk()) return;  // gone: nothing waits for the answer any more
  auto link = (*remote)->link();
  if (!link.isOk()) return;
  sendOwnedMessage((*link)->endpoint(), stagingReplyHeader_, std::move(payload),
                   "staging reply to '" + peerName + "'");
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

Result<std::string> Engine::dataPathDescription(const std::string& peerName) const {
  KVX_ASSIGN_OR_RETURN(auto remote, peer(peerName));
  GpuMemorySides sides;
  sides.reach = gpuReach_;
  for (const auto& region : registry_->regions()) {
    if (region->info.kind != MemoryKind::kCuda) continue;
    const bool staged = dynamic_cast<const StagedOnlyMemory*>(region->memory.get()) != nullptr;
    ++(staged ? sides.localStaged : sides.localDirect);
  }
  for (const RegionInfo& info : remote->regions()) {
    if (info.kind != MemoryKind::kCuda) continue;
    auto region = remote->resolve(MemoryRange{info.id, 0, info.length}, 0, "remote");
    if (!region.isOk()) continue;  // withdrawn meanwhile
    ++((*region)->packedKey.empty() ? sides.peerUnkeyed : sides.peerKeyed);
  }
  sides.peerWindow = remote->stagingWindow() != nullptr;
  return remote->dataPathDescription() + "; " + describeGpuMemory(sides);
}

}  // namespace kvx::engine
