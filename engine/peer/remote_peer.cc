#include "engine/peer/remote_peer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "engine/memory/memory_registry.h"
#include "engine/transport/owned_message.h"

namespace kvx::engine {

RemotePeer::RemotePeer(Transport& transport, PeerMetadata metadata,
                       LinkFailureHandler onLinkFailure, Clock::duration reopenWait)
    : transport_(transport),
      name_(std::move(metadata.name)),
      incarnation_(metadata.incarnation),
      applicationInfo_(std::move(metadata.applicationInfo)),
      dataAddress_(std::move(metadata.dataAddress)),
      onLinkFailure_(std::move(onLinkFailure)),
      reopenWait_(reopenWait) {}

RemotePeer::~RemotePeer() = default;

Result<std::shared_ptr<RemotePeer>> RemotePeer::connect(Transport& transport, PeerMetadata metadata,
                                                        LinkFailureHandler onLinkFailure,
                                                        Clock::duration reopenWait) {
  std::vector<RegionMetadata> regions = metadata.regions;
  const StagingWindowMetadata window = metadata.stagingWindow;
  std::shared_ptr<RemotePeer> peer(
      new RemotePeer(transport, std::move(metadata), std::move(onLinkFailure), reopenWait));
  peer->self_ = peer;
  KVX_RETURN_IF_ERROR(
      peer->checkKeys(regions, window).withContext("connecting to peer '" + peer->name_ + "'"));
  peer->updateRegions(regions);
  peer->updateStagingWindow(window);
  auto link = peer->openLink();
  if (!link.isOk()) return link.status().withContext("connecting to peer '" + peer->name_ + "'");
  sync::MutexLock lock(peer->mutex_);
  peer->link_ = std::move(link).value();
  return peer;
}

Status RemotePeer::checkKeys(const std::vector<RegionMetadata>& regions,
                             const StagingWindowMetadata& window) const {
  std::vector<PeerKey> keys;
  for (const RegionMetadata& m : regions) keys.push_back({m.packedKey, m.info.kind});
  if (window.present()) keys.push_back({window.packedKey, MemoryKind::kHost});
  return transport_.checkPeerKeys(dataAddress_, keys);
}

Result<std::shared_ptr<PeerLink>> RemotePeer::openLink() {
  std::uint64_t epoch;
  {
    sync::MutexLock lock(mutex_);
    epoch = nextEpoch_++;
  }
  auto endpoint = transport_.connect(dataAddress_, [self = self_, epoch](const Status& why) {
    if (auto peer = self.lock()) peer->onLinkFailed(epoch, why);
  });
  if (!endpoint.isOk()) return endpoint.status();
  return std::make_shared<PeerLink>(std::move(endpoint).value(), epoch);
}

void RemotePeer::onLinkFailed(std::uint64_t epoch, const Status& why) {
  {
    sync::MutexLock lock(mutex_);
    // A link replaced by resetLink() or closed by fail() may still report its failure.
    if (!failure_.isOk() || !link_ || link_->epoch() != epoch) return;
  }
  spdlog::warn("peer '{}': data path failed: {}", name_, why.toString());
  if (onLinkFailure_) onLinkFailure_(why);
}

Result<std::shared_ptr<RemoteRegion>> RemotePeer::resolve(const MemoryRange& range,
                                                          std::size_t index,
                                                          std::string_view side) const {
  std::shared_ptr<RemoteRegion> region;
  {
    sync::MutexLock lock(mutex_);
    auto it = regions_.find(range.region);
    if (it == regions_.end()) {
      return notFound(describeDescriptor(index, side) + ": peer '" + name_ +
                      "' has no exposed region " + std::to_string(range.region.value));
    }
    region = it->second;
  }
  if (!rangeFits(region->info.length, range.offset, range.length)) {
    return rangeError(index, side, region->info, range.offset, range.length,
                      " of peer '" + name_ + "'");
  }
  return region;
}

std::shared_ptr<const RemotePeer::Window> RemotePeer::stagingWindow() const {
  sync::MutexLock lock(mutex_);
  return window_;
}

void RemotePeer::updateStagingWindow(const StagingWindowMetadata& window) {
  if (!window.present()) return;
  sync::MutexLock lock(mutex_);
  if (window_ != nullptr) return;
  auto published = std::make_shared<Window>();
  published->region = std::make_shared<RemoteRegion>();
  published->region->info.name = name_ + ".staging-window";
  published->region->info.address = window.address;
  published->region->info.length = window.slotBytes * window.slots;
  published->region->info.kind = MemoryKind::kHost;
  published->region->packedKey = window.packedKey;
  published->slotBytes = window.slotBytes;
  published->slots = window.slots;
  window_ = std::move(published);
}

std::vector<RegionInfo> RemotePeer::regions() const {
  std::vector<RegionInfo> out;
  {
    sync::MutexLock lock(mutex_);
    for (const auto& [id, region] : regions_) out.push_back(region->info);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

void RemotePeer::updateRegions(const std::vector<RegionMetadata>& regions) {
  std::unordered_map<RegionId, std::shared_ptr<RemoteRegion>> next;
  sync::MutexLock lock(mutex_);
  for (const RegionMetadata& m : regions) {
    auto it = regions_.find(m.info.id);
    if (it != regions_.end() && it->second->packedKey == m.packedKey &&
        it->second->info.address == m.info.address && it->second->info.length == m.info.length) {
      next.emplace(m.info.id, it->second);
      continue;
    }
    auto region = std::make_shared<RemoteRegion>();
    region->info = m.info;
    region->packedKey = m.packedKey;
    next.emplace(m.info.id, std::move(region));
  }
  for (const auto& [id, region] : regions_) {
    auto it = next.find(id);
    if (it == next.end() || it->second != region) region->removed.store(true);
  }
  regions_ = std::move(next);
}

Result<std::shared_ptr<PeerLink>> RemotePeer::awaitLink() const {
  {
    sync::UniqueLock lock(mutex_);
    if (!linkReady_.wait_until(
            lock.native(), Clock::now() + reopenWait_,
            [this]() KVX_REQUIRES(mutex_) { return !reopening_ || !failure_.isOk(); })) {
      return timedOut(
          "the data path to peer '" + name_ + "' was not reopened within " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::milliseconds>(reopenWait_).count()) +
          " ms of a reset");
    }
  }
  return link();
}

Result<std::shared_ptr<PeerLink>> RemotePeer::linkWhenReady(std::function<void()> onReady) {
  {
    sync::MutexLock lock(mutex_);
    if (failure_.isOk() && reopening_) {
      onLinkReady_.push_back(std::move(onReady));
      return std::shared_ptr<PeerLink>();
    }
  }
  return link();
}

Result<std::shared_ptr<PeerLink>> RemotePeer::link() const {
  sync::MutexLock lock(mutex_);
  if (!failure_.isOk()) return failure_;
  if (reopening_) {
    return transportError("the data path to peer '" + name_ + "' is being reopened after a reset");
  }
  if (!link_) return peerFailed("peer '" + name_ + "' has no data-path link");
  return link_;
}

Status RemotePeer::unpackKeys(const std::vector<std::shared_ptr<RemoteRegion>>& regions) {
  KVX_ASSIGN_OR_RETURN(std::shared_ptr<PeerLink> current, awaitLink());
  for (const auto& region : regions) {
    KVX_RETURN_IF_ERROR(current->key(region).status());
  }
  return Status::ok();
}

Status RemotePeer::resetLink(const std::string& reason, Deadline bound) {
  if (!beginReset(reason, bound)) {
    // Another reset is opening the next link: wait for it, as a caller of awaitLink would.
    return awaitLink().status();
  }
  return finishReset();
}

bool RemotePeer::beginReset(const std::string& reason, Deadline bound) {
  ResetInProgress reset;
  reset.reason = reason;
  reset.bound = bound;
  reset.started = Clock::now();
  std::shared_ptr<PeerLink> old;
  std::vector<std::shared_ptr<RemoteRegion>> regions;
  {
    sync::MutexLock lock(mutex_);
    // Another reset closed the link this one would close and is opening the next; a failed
    // peer has no link to reset.
    if (reopening_ || !failure_.isOk()) return false;
    old = std::move(link_);
    reopening_ = true;
    spdlog::info("peer '{}': resetting data path ({})", name_, reason);
    for (const auto& [id, region] : regions_) regions.push_back(region);
  }
  // The link's lock is never taken under mutex_: PeerLink::key() holds it while unpacking
  // on the endpoint (the worker's lock), and completions that run under the worker's lock
  // take mutex_ (failure()).
  for (const auto& region : regions) {
    if (old && old->hasKey(*region)) reset.keyed.push_back(region);
  }
  if (old) reset.cancelled = old->closeForReset(bound, reason);
  reset.closedAt = Clock::now();
  sync::MutexLock lock(mutex_);
  reset_ = std::move(reset);
  return true;
}

Clock::time_point RemotePeer::resetStarted() const {
  sync::MutexLock lock(mutex_);
  return reopening_ ? reset_.started : Clock::time_point{};
}

Status RemotePeer::finishReset() {
  ResetInProgress reset;
  bool failed;
  {
    sync::MutexLock lock(mutex_);
    reset = std::move(reset_);
    reset_ = ResetInProgress();
    failed = !failure_.isOk();
  }
  const auto openedFrom = Clock::now();
  // A peer declared failed since the close gets no new endpoint.
  std::optional<Result<std::shared_ptr<PeerLink>>> fresh;
  if (!failed) fresh = openLink();
  const auto openedAt = Clock::now();
  std::shared_ptr<PeerLink> next, unwanted;
  std::vector<std::function<void()>> waiting;
  {
    sync::MutexLock lock(mutex_);
    reopening_ = false;
    draining_ = true;  // until drainDeferred() sent what waits, after the resends
    waiting.swap(onLinkReady_);
    if (!fresh) {
      // failure_ stays as it is.
    } else if (!fresh->isOk()) {
      if (failure_.isOk()) {
        failure_ =
            fresh->status().withContext("peer '" + name_ + "': reconnect after " + reset.reason);
      }
    } else if (!failure_.isOk()) {
      unwanted = std::move(*fresh).value();  // the peer was declared failed meanwhile
    } else {
      next = std::move(*fresh).value();
      link_ = next;
    }
  }
  linkReady_.notify_all();
  if (unwanted) unwanted->close(true);
  resend(std::move(reset.cancelled), next);
  drainDeferred(next);
  for (const auto& onReady : waiting) onReady();
  if (!next) return failure();
  // Best effort, within the bound: a key left out is unpacked at its next transfer, and one
  // that fails fails that transfer with the reason.
  std::size_t unpacked = 0;
  for (const auto& region : reset.keyed) {
    if (Clock::now() >= reset.bound) break;
    if (auto key = next->key(region); !key.isOk()) {
      spdlog::warn("peer '{}': after the reset: {}", name_, key.status().toString());
    }
    ++unpacked;
  }
  const auto ms = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  // The bound covers the close, which the cancel waits for; the open, which UCX does not
  // bound, runs after it, off the cancel's path. A close that ran past the bound is a
  // warning; a slow open is worth a line.
  const bool slowClose = reset.closedAt > reset.bound;
  const bool slowOpen = openedAt - openedFrom > std::chrono::milliseconds(500);
  spdlog::log(
      slowClose ? spdlog::level::warn : (slowOpen ? spdlog::level::info : spdlog::level::debug),
      "peer '{}': data path reset in {} ms (closing the old endpoint {} ms, opening the "
      "new endpoint {} ms, {} of {} keys unpacked again)",
      name_, ms(Clock::now() - reset.started), ms(reset.closedAt - reset.started),
      ms(openedAt - openedFrom), unpacked, reset.keyed.size());
  return Status::ok();
}

void RemotePeer::resend(std::vector<CancelledMessage> messages,
                        const std::shared_ptr<PeerLink>& next) {
  if (messages.empty()) return;
  spdlog::info("peer '{}': sending {} notification(s) that the reset cancelled again", name_,
               messages.size());
  for (CancelledMessage& message : messages) {
    if (!next) {
      message.completion->onComplete(failure());
      continue;
    }
    // The sender's completion reports that the copy went out on the new link: it must not
    // wait on the new link's delivery, which may be as slow as the old one's.
    sendOwnedMessage(next->endpoint(), std::move(message.header), std::move(message.payload),
                     "notification to '" + name_ + "', sent again after a reset,");
    message.completion->onComplete(Status::ok());
  }
}

Status RemotePeer::sendOwned(std::vector<std::uint8_t> header, std::vector<std::uint8_t> payload,
                             std::string what) {
  std::shared_ptr<PeerLink> current;
  {
    sync::MutexLock lock(mutex_);
    if (!failure_.isOk()) return failure_;
    if (reopening_ || draining_) {
      if (deferred_.size() >= kMaxDeferred) {
        return resourceExhausted(what + ": " + std::to_string(kMaxDeferred) +
                                 " messages already wait for the data path to peer '" + name_ +
                                 "' to be reopened");
      }
      deferred_.push_back({std::move(header), std::move(payload), std::move(what)});
      return Status::ok();
    }
    if (!link_) return peerFailed("peer '" + name_ + "' has no data-path link");
    current = link_;
  }
  sendOwnedMessage(current->endpoint(), std::move(header), std::move(payload), std::move(what));
  return Status::ok();
}

void RemotePeer::drainDeferred(const std::shared_ptr<PeerLink>& next) {
  while (true) {
    std::vector<Deferred> batch;
    {
      sync::MutexLock lock(mutex_);
      if (deferred_.empty()) {
        draining_ = false;
        return;
      }
      batch.swap(deferred_);
    }
    for (Deferred& message : batch) {
      if (next) {
        sendOwnedMessage(next->endpoint(), std::move(message.header), std::move(message.payload),
                         std::move(message.what));
      } else {
        spdlog::warn("{} was not sent: {}", message.what, failure().toString());
      }
    }
  }
}

void RemotePeer::fail(Status why) {
  std::shared_ptr<PeerLink> old;
  {
    sync::MutexLock lock(mutex_);
    if (failure_.isOk()) failure_ = std::move(why);
    old = std::move(link_);
  }
  linkReady_.notify_all();  // awaitLink() returns the failure
  if (old) old->close(true);
  transport_.dropPeer(dataAddress_);  // and nothing it still sends lands here
}

Status RemotePeer::failure() const {
  sync::MutexLock lock(mutex_);
  return failure_;
}

std::string RemotePeer::dataPathDescription() const {
  sync::MutexLock lock(mutex_);
  return link_ ? link_->endpoint().description() : "none";
}

bool RemotePeer::peerWritesDirectly() const {
  sync::MutexLock lock(mutex_);
  return link_ ? link_->endpoint().peerWritesDirectly() : true;
}

}  // namespace kvx::engine
