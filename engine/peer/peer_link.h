#pragma once

// PeerLink: one data-path endpoint to a peer plus the remote keys unpacked on it. A peer's
// link is replaced (never mutated) when its endpoint is reset; transfers keep the link they
// posted on alive until their operations have completed.

#include <memory>
#include <mutex>
#include <unordered_map>

#include "engine/peer/remote_region.h"
#include "engine/transport/endpoint.h"
#include "kvx/result.h"

namespace kvx::engine {

class PeerLink {
 public:
  PeerLink(std::shared_ptr<Endpoint> endpoint, std::uint64_t epoch)
      : endpoint_(std::move(endpoint)), epoch_(epoch) {}
  // Destroys the keys, then closes the endpoint (UCX requires that order).
  ~PeerLink();

  Endpoint& endpoint() { return *endpoint_; }
  std::uint64_t epoch() const { return epoch_; }

  // The key for `region` on this link, unpacked on first use. Thread-safe.
  Result<const RemoteKey*> key(const RemoteRegion& region);

  // True when the key of `region` was unpacked on this link. Thread-safe.
  bool hasKey(const RemoteRegion& region);

  // Closes the endpoint now; with `force`, in-flight operations fail before this returns.
  void close(bool force);

 private:
  std::shared_ptr<Endpoint> endpoint_;
  std::uint64_t epoch_;
  std::mutex mutex_;
  std::unordered_map<const RemoteRegion*, std::unique_ptr<RemoteKey>> keys_;
};

}  // namespace kvx::engine
