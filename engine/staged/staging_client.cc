#include "engine/staged/staging_client.h"

#include <vector>

namespace kvx::engine {

std::uint32_t StagingClient::nextWireId() {
  sync::MutexLock lock(mutex_);
  for (;;) {
    const std::uint32_t id = nextId_++;
    if (id != 0 && wires_.find(id) == wires_.end()) return id;
  }
}

void StagingClient::add(std::uint32_t wireId, const std::string& peer,
                        const std::shared_ptr<RemoteStagedWire>& wire) {
  sync::MutexLock lock(mutex_);
  wires_[wireId] = Entry{peer, wire};
}

void StagingClient::remove(std::uint32_t wireId) {
  sync::MutexLock lock(mutex_);
  wires_.erase(wireId);
}

bool StagingClient::route(const std::string& peer, const StagingReply& reply) {
  const auto wireId = static_cast<std::uint32_t>(reply.requestId >> 32);
  std::shared_ptr<RemoteStagedWire> wire;
  {
    sync::MutexLock lock(mutex_);
    auto it = wires_.find(wireId);
    if (it != wires_.end() && it->second.peer == peer) wire = it->second.wire.lock();
    const bool slotReply =
        reply.kind == StagingReplyKind::kGranted || reply.kind == StagingReplyKind::kReady;
    // Only ids this side handed out are its to release: a reply to anything else is dropped.
    if (!wire && slotReply && wireId != 0 && wireId < nextId_) {
      orphans_.emplace_back(peer,
                            StagingRequest{StagingOp::kRelease, reply.slot, reply.requestId, {}});
      hasOrphans_.store(true);
    }
  }
  if (!wire) return false;
  wire->onReply(reply);
  return true;
}

std::vector<std::pair<std::string, StagingRequest>> StagingClient::takeOrphans() {
  std::vector<std::pair<std::string, StagingRequest>> taken;
  if (!hasOrphans_.load()) return taken;
  sync::MutexLock lock(mutex_);
  taken.swap(orphans_);
  hasOrphans_.store(false);
  return taken;
}

bool StagingClient::tick(std::chrono::steady_clock::time_point now,
                         std::chrono::milliseconds every) {
  std::vector<std::shared_ptr<RemoteStagedWire>> live;
  {
    sync::MutexLock lock(mutex_);
    if (wires_.empty() || now - lastTick_ < every) return false;
    lastTick_ = now;
    for (const auto& [id, entry] : wires_) {
      if (auto wire = entry.wire.lock()) live.push_back(std::move(wire));
    }
  }
  for (const auto& wire : live) wire->tick(now);
  return true;
}

}  // namespace kvx::engine
