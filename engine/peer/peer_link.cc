#include "engine/peer/peer_link.h"

namespace kvx::engine {

PeerLink::~PeerLink() {
  endpoint_->close(false);  // before the key objects, as in close()
  sync::MutexLock lock(mutex_);
  keys_.clear();
}

Result<const RemoteKey*> PeerLink::key(const std::shared_ptr<RemoteRegion>& region) {
  sync::MutexLock lock(mutex_);
  auto it = keys_.find(region.get());
  if (it != keys_.end()) return static_cast<const RemoteKey*>(it->second.key.get());
  auto unpacked = endpoint_->unpackRemoteKey(region->packedKey, region->info.kind);
  if (!unpacked.isOk()) {
    return unpacked.status().withContext("unpacking the key of remote region '" +
                                         region->info.name + "'");
  }
  const RemoteKey* raw = unpacked->get();
  keys_.emplace(region.get(), Entry{region, std::move(unpacked).value()});
  return raw;
}

bool PeerLink::hasKey(const RemoteRegion& region) {
  sync::MutexLock lock(mutex_);
  return keys_.contains(&region);
}

void PeerLink::releaseKeys() {
  std::unordered_map<const RemoteRegion*, Entry> keys;
  {
    sync::MutexLock lock(mutex_);
    keys.swap(keys_);
  }
  keys.clear();
}

std::vector<CancelledMessage> PeerLink::closeForReset(Deadline deadline, std::string reason) {
  if (!reset_.load(std::memory_order_relaxed)) {  // only RemotePeer::resetLink calls this, once
    resetReason_ = std::move(reason);
    reset_.store(true, std::memory_order_release);
  }
  std::vector<CancelledMessage> cancelled = endpoint_->closeForReset(deadline);  // see close()
  releaseKeys();
  return cancelled;
}

void PeerLink::close(bool force) {
  // The endpoint closes first, and the key objects go after it: a transfer may still hold
  // this link's key pointers and be about to post with them; once the endpoint is closed it
  // refuses every post before it looks at a key, while a key destroyed under an open endpoint
  // would be read after its free (UBSan saw it under peer_kill_test). The endpoint's close
  // destroys the transport's handles of these keys itself, before the endpoint goes, as UCX
  // requires. Not under mutex_: a forced close fails in-flight operations right here, and
  // their completions take the peer's lock (Transfer -> RemotePeer::failure), while resetLink
  // holds the peer's lock to ask hasKey(): closing under mutex_ is a lock-order inversion.
  endpoint_->close(force);
  releaseKeys();
}

}  // namespace kvx::engine
