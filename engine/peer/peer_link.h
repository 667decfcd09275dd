#pragma once

// PeerLink: one data-path endpoint to a peer plus the remote keys unpacked on it. A peer's
// link is replaced (never mutated) when its endpoint is reset; transfers keep the link they
// posted on alive until their operations have completed.

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/peer/link_endpoint.h"
#include "engine/peer/remote_region.h"
#include "engine/transport/endpoint.h"
#include "kvx/result.h"
#include "sync/mutex.h"

namespace kvx::engine {

class PeerLink {
 public:
  PeerLink(std::shared_ptr<Endpoint> endpoint, std::uint64_t epoch)
      : endpoint_(std::make_shared<LinkEndpoint>(std::move(endpoint))), epoch_(epoch) {}
  // Closes the endpoint (which destroys the transport handles of its keys first, as UCX
  // requires), then the key objects: a post racing with the close finds it closed.
  ~PeerLink();

  Endpoint& endpoint() { return *endpoint_; }
  std::uint64_t epoch() const { return epoch_; }

  // The key for `region` on this link, unpacked on first use. Thread-safe. The link holds
  // `region` while it holds its key, so a region withdrawn and replaced by its peer can never
  // be mistaken for its successor (a new region at a reused address). Keys of withdrawn
  // regions stay until the link closes: a transfer posted before the withdrawal may still
  // be using one.
  Result<const RemoteKey*> key(const std::shared_ptr<RemoteRegion>& region);

  // True when the key of `region` was unpacked on this link. Thread-safe.
  bool hasKey(const RemoteRegion& region);

  // Closes the endpoint now; with `force`, in-flight operations fail before this returns.
  void close(bool force);
  // Force-closes the endpoint for a reset of our own (`reason`), waiting for the transport
  // at most until `deadline`; returns the notifications the close cancelled, for the next
  // link (LinkEndpoint::closeForReset). The link is marked reset before the close fails
  // anything, so a completion that fails on it can tell our reset from a fault.
  std::vector<CancelledMessage> closeForReset(Deadline deadline, std::string reason);

  // True once closeForReset() began; then resetReason() says why. Thread-safe, lock-free
  // (for completion context).
  bool wasReset() const { return reset_.load(std::memory_order_acquire); }
  // REQUIRES: wasReset().
  const std::string& resetReason() const { return resetReason_; }

 private:
  // Destroys the keys unpacked on this link (UCX: before the endpoint closes).
  void releaseKeys() KVX_EXCLUDES(mutex_);

  std::shared_ptr<LinkEndpoint> endpoint_;
  std::uint64_t epoch_;
  std::string resetReason_;  // written once, before reset_ is set
  std::atomic<bool> reset_{false};
  sync::Mutex mutex_;
  struct Entry {
    std::shared_ptr<RemoteRegion> region;  // keeps the address unique while keyed
    std::unique_ptr<RemoteKey> key;
  };
  std::unordered_map<const RemoteRegion*, Entry> keys_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine
