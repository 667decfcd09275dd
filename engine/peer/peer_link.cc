#include "engine/peer/peer_link.h"

namespace kvx::engine {

PeerLink::~PeerLink() {
  {
    std::lock_guard lock(mutex_);
    keys_.clear();
  }
  endpoint_->close(false);
}

Result<const RemoteKey*> PeerLink::key(const std::shared_ptr<RemoteRegion>& region) {
  std::lock_guard lock(mutex_);
  auto it = keys_.find(region.get());
  if (it != keys_.end()) return static_cast<const RemoteKey*>(it->second.key.get());
  auto unpacked = endpoint_->unpackRemoteKey(region->packedKey);
  if (!unpacked.isOk()) {
    return unpacked.status().withContext("unpacking the key of remote region '" +
                                         region->info.name + "'");
  }
  const RemoteKey* raw = unpacked->get();
  keys_.emplace(region.get(), Entry{region, std::move(unpacked).value()});
  return raw;
}

bool PeerLink::hasKey(const RemoteRegion& region) {
  std::lock_guard lock(mutex_);
  return keys_.contains(&region);
}

void PeerLink::releaseKeys() {
  std::unordered_map<const RemoteRegion*, Entry> keys;
  {
    std::lock_guard lock(mutex_);
    keys.swap(keys_);
  }
  keys.clear();
}

std::vector<CancelledMessage> PeerLink::closeForReset(Deadline deadline) {
  releaseKeys();  // not under mutex_: see close()
  return endpoint_->closeForReset(deadline);
}

void PeerLink::close(bool force) {
  releaseKeys();
  // Not under mutex_: a forced close fails in-flight operations right here, and their
  // completions take the peer's lock (Transfer -> RemotePeer::failure), while resetLink holds
  // the peer's lock to ask hasKey(): closing under mutex_ is a lock-order inversion. A key()
  // racing with this close is released by the endpoint's own close before the endpoint goes.
  endpoint_->close(force);
}

}  // namespace kvx::engine
