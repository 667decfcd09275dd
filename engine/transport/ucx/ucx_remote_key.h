#pragma once

// Remote keys: the packed form kvx publishes for a UcxMemory, and UcxRemoteKey, a peer's key
// unpacked (ucp_ep_rkey_unpack) for one endpoint.
//
// Packed form: a frame (ucx_frame.h) around u64 region address | u64 region length | the
// UCX key. The frame lets garbage be rejected before UCX parses it (ucp_ep_rkey_unpack
// takes no length); the region bounds let put/get reject an out-of-range remote address
// before UCX sees it.
//
// Lifetime: a UcxRemoteKey holds its endpoint; Endpoint::close() destroys the UCX key of
// every key still alive (UCX requires keys to go before their endpoint), after which the
// object is inert and only frees itself.

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/transport/endpoint.h"
#include "engine/transport/ucx/ucx_endpoint.h"
#include "kvx/result.h"

namespace kvx::engine::ucx {

struct PackedRemoteKey {
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  std::span<const std::uint8_t> ucxKey;  // points into the parsed buffer
};

std::vector<std::uint8_t> packRemoteKey(std::uint64_t address, std::uint64_t length,
                                        std::span<const std::uint8_t> ucxKey);
// INVALID_ARGUMENT, naming what is wrong, unless `packed` is a well-formed packed key.
Result<PackedRemoteKey> parseRemoteKey(std::span<const std::uint8_t> packed);

class UcxRemoteKey final : public RemoteKey {
 public:
  // REQUIRES: the transport's lock is held (by the endpoint that unpacks).
  UcxRemoteKey(std::shared_ptr<UcxEndpoint> endpoint, ucp_rkey_h handle,
               const PackedRemoteKey& packed)
      : endpoint_(std::move(endpoint)),
        handle_(handle),
        address_(packed.address),
        length_(packed.length) {}
  ~UcxRemoteKey() override;

  const UcxEndpoint* endpoint() const { return endpoint_.get(); }
  // REQUIRES: the transport's lock (the worker's mutex). The endpoint calls these holding it,
  // which the analysis cannot tell is this key's endpoint's: they assume it (assumeHeld).
  // Null once the endpoint was closed.
  ucp_rkey_h handleLocked() const;
  // Destroys the UCX key (endpoint closing).
  void releaseLocked();
  // True when [address, address + length) lies inside the peer's region.
  bool covers(std::uint64_t address, std::uint64_t length) const {
    return address >= address_ && address - address_ <= length_ &&
           length <= length_ - (address - address_);
  }
  std::uint64_t regionAddress() const { return address_; }
  std::uint64_t regionLength() const { return length_; }

 private:
  std::shared_ptr<UcxEndpoint> endpoint_;
  ucp_rkey_h handle_ KVX_GUARDED_BY(endpoint_->worker().mutex());
  std::uint64_t address_;
  std::uint64_t length_;
};

}  // namespace kvx::engine::ucx
