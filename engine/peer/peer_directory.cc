#include "engine/peer/peer_directory.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace kvx::engine {
namespace {

// What a peer's metadata says of it that may change while its incarnation lives.
void refreshAdvertised(RemotePeer& peer, const std::vector<RegionMetadata>& regions,
                       const StagingWindowMetadata& window) {
  peer.updateRegions(regions);
  peer.updateStagingWindow(window);
}

}  // namespace

PeerDirectory::PeerDirectory(std::string self, Transport& transport, ReopenGate gate, Hooks hooks)
    : self_(std::move(self)),
      transport_(transport),
      hooks_(std::move(hooks)),
      reopenWait_(RemotePeer::kReopenWait + gate.longest) {
  reopener_.setGate(std::move(gate));
}

PeerDirectory::~PeerDirectory() = default;

Status PeerDirectory::addOrUpdate(PeerMetadata metadata) {
  if (metadata.name == self_) {
    return invalidArgument("peer metadata carries this agent's own name '" + metadata.name + "'");
  }
  if (metadata.transport != transport_.name()) {
    return invalidArgument("peer '" + metadata.name + "' uses transport '" + metadata.transport +
                           "' but this agent uses '" + std::string(transport_.name()) + "'");
  }
  std::shared_ptr<RemotePeer> known;
  {
    sync::MutexLock lock(mutex_);
    auto it = peers_.find(metadata.name);
    if (it != peers_.end()) known = it->second;
  }
  if (known && known->removalClaimed()) {
    // Being removed (its link closing): wait until it is gone, then connect afresh.
    (void)removeIf(metadata.name, known->incarnation(), peerFailed("removed"));
    known.reset();
  }
  if (known && known->incarnation() == metadata.incarnation) {
    refreshAdvertised(*known, metadata.regions, metadata.stagingWindow);
    return Status::ok();
  }
  const Status restarted = peerFailed("peer '" + metadata.name + "' restarted (new incarnation)");
  if (known) {
    const Status removed = removeIf(metadata.name, known->incarnation(), restarted);
    // Gone meanwhile, or replaced by another handshake: the insertion below sorts it out.
    if (!removed.isOk() && removed.code() != StatusCode::kNotFound &&
        removed.code() != StatusCode::kFailedPrecondition) {
      return removed;
    }
  }
  const std::string name = metadata.name;
  const std::uint64_t incarnation = metadata.incarnation;
  const std::vector<RegionMetadata> regions = metadata.regions;
  const StagingWindowMetadata window = metadata.stagingWindow;
  KVX_ASSIGN_OR_RETURN(auto peer, RemotePeer::connect(
                                      transport_, std::move(metadata),
                                      [this, name, incarnation](const Status& why) {
                                        onDataPathFailed(name, incarnation, why);
                                      },
                                      reopenWait_));
  std::shared_ptr<RemotePeer> redundant;  // closed outside the lock
  bool joined = true;
  for (int attempt = 0;; ++attempt) {
    std::uint64_t other = 0;
    {
      sync::MutexLock lock(mutex_);
      auto [it, inserted] = peers_.try_emplace(name, peer);
      if (inserted) break;
      if (it->second->incarnation() == incarnation) {
        // Both agents connected to each other and the other handshake won: keep its peer
        // object, so that transfers already made against it stay valid.
        refreshAdvertised(*it->second, regions, window);
        redundant = std::move(peer);
        joined = false;
        break;
      }
      other = it->second->incarnation();
    }
    // Another incarnation got in meanwhile: its link closes before this one is listed, so
    // that one name never has two links, nor a new one while the old one can still land.
    if (attempt == 3) {
      peer->fail(restarted);
      return failedPrecondition("peer '" + name + "' kept changing incarnation while it " +
                                "connected (this one " + std::to_string(incarnation) +
                                ", the last other " + std::to_string(other) + "); connect again");
    }
    (void)removeIf(name, other, restarted);  // whatever happened, look again
  }
  if (joined) {
    if (hooks_.describe) {
      if (auto path = hooks_.describe(name); path.isOk()) {
        spdlog::info("{}: data path to peer '{}': {}", self_, name, *path);
      }
    }
    emitEvent(PeerEvent::Kind::kJoined, name, incarnation, Status::ok());
  }
  return Status::ok();
}

Status PeerDirectory::update(PeerMetadata metadata) {
  KVX_ASSIGN_OR_RETURN(auto known, find(metadata.name));
  if (known->incarnation() != metadata.incarnation) {
    return failedPrecondition("stale metadata for peer '" + metadata.name + "': incarnation " +
                              std::to_string(metadata.incarnation) + ", but incarnation " +
                              std::to_string(known->incarnation()) + " is connected");
  }
  KVX_RETURN_IF_ERROR(known->checkKeys(metadata.regions, metadata.stagingWindow)
                          .withContext("metadata update from peer '" + metadata.name + "'"));
  refreshAdvertised(*known, metadata.regions, metadata.stagingWindow);
  return Status::ok();
}

Status PeerDirectory::remove(const std::string& name, Status why) {
  return removeIf(name, std::nullopt, std::move(why));
}

Result<std::shared_ptr<RemotePeer>> PeerDirectory::find(const std::string& name) const {
  sync::MutexLock lock(mutex_);
  auto it = peers_.find(name);
  if (it != peers_.end()) return it->second;
  for (const auto& [gone, why] : departed_) {
    if (gone == name) return notFound("peer '" + name + "' left: " + why.toString());
  }
  return notFound("unknown peer '" + name + "'");
}

std::vector<std::string> PeerDirectory::names() const {
  sync::MutexLock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(peers_.size());
  for (const auto& [name, peer] : peers_) out.push_back(name);
  return out;
}

void PeerDirectory::setEventHandler(PeerEventHandler handler) {
  sync::MutexLock lock(handlerMutex_);
  eventHandler_ = handler ? std::make_shared<const PeerEventHandler>(std::move(handler)) : nullptr;
}

void PeerDirectory::setDataPathFailureHandler(DataPathFailureHandler handler) {
  sync::MutexLock lock(handlerMutex_);
  failureHandler_ =
      handler ? std::make_shared<const DataPathFailureHandler>(std::move(handler)) : nullptr;
}

void PeerDirectory::resetLink(const std::shared_ptr<RemotePeer>& peer, const std::string& reason,
                              Deadline bound) {
  if (peer->beginReset(reason, bound)) reopener_.reopen(peer);
}

void PeerDirectory::failAll(const Status& why) {
  std::vector<std::shared_ptr<RemotePeer>> peers;
  {
    sync::MutexLock lock(mutex_);
    peers.reserve(peers_.size());
    for (const auto& [name, peer] : peers_) peers.push_back(peer);
  }
  for (const auto& peer : peers) peer->fail(why);
  reopener_.stop();  // what it still has queued belongs to failed peers: it only cleans up
}

void PeerDirectory::clear() {
  std::unordered_map<std::string, std::shared_ptr<RemotePeer>> peers;
  {
    sync::MutexLock lock(mutex_);
    peers.swap(peers_);
  }
  unlisted_.notify_all();
}

void PeerDirectory::onDataPathFailed(const std::string& name, std::uint64_t incarnation,
                                     const Status& why) {
  // The endpoint is gone for good: operations in flight on it may never complete (UCX does
  // not always complete them after a keepalive timeout over tcp), and nothing reaches the
  // peer through it any more. Removing the peer closes the link, which fails them now.
  const Status failure = peerFailed("data path to peer '" + name + "' failed: " + why.message());
  if (!removeIf(name, incarnation, failure).isOk()) return;  // gone or replaced already
  std::shared_ptr<const DataPathFailureHandler> handler;
  {
    sync::MutexLock lock(handlerMutex_);
    handler = failureHandler_;
  }
  if (handler) (*handler)(name, failure);
}

void PeerDirectory::emitEvent(PeerEvent::Kind kind, const std::string& peer,
                              std::uint64_t incarnation, Status why) {
  std::shared_ptr<const PeerEventHandler> handler;
  {
    sync::MutexLock lock(handlerMutex_);
    handler = eventHandler_;
  }
  if (handler) (*handler)(PeerEvent{kind, peer, incarnation, std::move(why)});
}

Status PeerDirectory::removeIf(const std::string& name, std::optional<std::uint64_t> incarnation,
                               Status why) {
  std::shared_ptr<RemotePeer> peer;
  {
    sync::UniqueLock lock(mutex_);
    auto it = peers_.find(name);
    if (it == peers_.end()) return notFound("unknown peer '" + name + "'");
    if (incarnation && it->second->incarnation() != *incarnation) {
      return failedPrecondition("peer '" + name + "' is another incarnation now (" +
                                std::to_string(it->second->incarnation()) + ", not " +
                                std::to_string(*incarnation) + ")");
    }
    peer = it->second;
    if (!peer->claimRemoval()) {
      // Another thread is closing its link: the peer is gone once that thread unlisted it.
      const bool unlisted =
          unlisted_.wait_for(lock.native(), kRemovalWait, [&]() KVX_REQUIRES(mutex_) {
            auto now = peers_.find(name);
            return now == peers_.end() || now->second != peer;
          });
      if (!unlisted) {
        return notFound("peer '" + name + "' is being removed by another thread, and was " +
                        "not yet unlisted after " + std::to_string(kRemovalWait.count()) + " s");
      }
      return notFound("peer '" + name + "' was removed meanwhile");
    }
  }
  if (hooks_.failTransfers) hooks_.failTransfers(*peer, why);
  peer->fail(why);  // force-closes the link: in-flight operations complete with errors now
  {
    sync::MutexLock lock(mutex_);
    auto it = peers_.find(name);
    if (it != peers_.end() && it->second == peer) peers_.erase(it);
    std::erase_if(departed_, [&](const auto& entry) { return entry.first == name; });
    if (departed_.size() == kDepartedKept) departed_.pop_front();
    departed_.emplace_back(name, why);
  }
  unlisted_.notify_all();
  if (hooks_.unlisted) hooks_.unlisted(name);
  spdlog::info("{}: peer '{}' removed: {}", self_, name, why.toString());
  emitEvent(PeerEvent::Kind::kLeft, name, peer->incarnation(), std::move(why));
  return Status::ok();
}

}  // namespace kvx::engine
