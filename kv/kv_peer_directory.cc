#include "kv/kv_peer_directory.h"

namespace kvx::kv {

void KvPeerDirectory::record(const std::string& name, KvPeer peer) {
  {
    sync::MutexLock lock(mutex_);
    peers_[name] = std::move(peer);
  }
  changed_.notify_all();
}

bool KvPeerDirectory::forget(const std::string& name) {
  sync::MutexLock lock(mutex_);
  return peers_.erase(name) > 0;
}

void KvPeerDirectory::departed(const std::string& name, std::uint64_t incarnation,
                               const Status& why) {
  {
    sync::MutexLock lock(mutex_);
    if (departed_.size() >= kDepartedKept && departed_.count(name) == 0) {
      departed_.erase(departed_.begin());
    }
    departed_.insert_or_assign(name, std::make_pair(incarnation, why));
  }
  changed_.notify_all();
}

std::optional<KvPeer> KvPeerDirectory::find(const std::string& name) const {
  sync::MutexLock lock(mutex_);
  auto it = peers_.find(name);
  if (it == peers_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, KvPeer> KvPeerDirectory::all() const {
  sync::MutexLock lock(mutex_);
  return peers_;
}

bool KvPeerDirectory::compatible(const std::string& name) const {
  sync::MutexLock lock(mutex_);
  auto it = peers_.find(name);
  return it != peers_.end() && it->second.compatible;
}

Result<KvPeer> KvPeerDirectory::waitFor(const std::string& name, std::uint64_t incarnation,
                                        Deadline deadline, const std::atomic<bool>& stop) const {
  sync::UniqueLock lock(mutex_);
  const auto here = [&]() KVX_REQUIRES(mutex_) {
    auto it = peers_.find(name);
    return it != peers_.end() && it->second.incarnation == incarnation;
  };
  const auto gone = [&]() KVX_REQUIRES(mutex_) {
    auto it = departed_.find(name);
    return it != departed_.end() && it->second.first == incarnation;
  };
  const bool found = changed_.wait_until(lock.native(), deadline, [&]() KVX_REQUIRES(mutex_) {
    return here() || gone() || stop.load();
  });
  if (stop.load()) return failedPrecondition("the KV agent is shut down");
  if (!here() && gone()) {
    return departed_.at(name).second.withContext("it left before its KV description was taken in");
  }
  if (!found) return timedOut("its KV description was not taken in by the deadline");
  return peers_.at(name);
}

void KvPeerDirectory::wakeAll() {
  { sync::MutexLock lock(mutex_); }
  changed_.notify_all();
}

}  // namespace kvx::kv
