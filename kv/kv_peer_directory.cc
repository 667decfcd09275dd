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
  const bool found = changed_.wait_until(
      lock.native(), deadline, [&]() KVX_REQUIRES(mutex_) { return here() || stop.load(); });
  if (stop.load()) return failedPrecondition("the KV agent is shut down");
  if (!found) return timedOut("its KV description was not taken in by the deadline");
  return peers_.at(name);
}

void KvPeerDirectory::wakeAll() {
  { sync::MutexLock lock(mutex_); }
  changed_.notify_all();
}

}  // namespace kvx::kv
