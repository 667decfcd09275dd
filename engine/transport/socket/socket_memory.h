#pragma once

// SocketMemory: a region registered with a socket transport, and SocketRemoteKey, a peer's
// region key unpacked for an endpoint.
//
// Packed key (native byte order): u32 magic "KVXk" | u8 version | 3 zero bytes |
//   u64 region id | u64 secret | u64 region address | u64 region length.
// The secret is 64 random bits drawn at registration. The target checks id, secret and
// bounds on every put and get before it touches memory: a peer that does not hold the key
// (or a stranger on the data port) can address nothing, and a key outlives its region only
// as a refusal.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/memory/address_range.h"
#include "engine/transport/endpoint.h"
#include "engine/transport/transport_memory.h"
#include "kvx/result.h"

namespace kvx::engine::socket {

class SocketTransport;

struct RegionKey {
  std::uint64_t region = 0;
  std::uint64_t secret = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;

  // True when [start, start + bytes) is a non-empty range inside the region.
  bool covers(std::uint64_t start, std::uint64_t bytes) const {
    return rangeWithin(address, length, start, bytes);
  }
};

std::vector<std::uint8_t> packRegionKey(const RegionKey& key);
// INVALID_ARGUMENT naming what is wrong unless `packed` is a well-formed packed key.
Result<RegionKey> parseRegionKey(std::span<const std::uint8_t> packed);

// Owned by whoever registered it; its destructor deregisters the region from its transport,
// which closes any inbound connection in the middle of placing a peer's put into it or
// sending a peer's get from it. This side's own operations on it are the caller's to finish
// first (the Endpoint contract: a local buffer stays valid until its completion).
class SocketMemory final : public TransportMemory {
 public:
  SocketMemory(SocketTransport& transport, const RegionKey& key, MemoryKind kind, int device,
               std::unique_ptr<std::uint8_t[]> owned);
  ~SocketMemory() override;

  void* address() const override { return reinterpret_cast<void*>(key_.address); }
  std::uint64_t length() const override { return key_.length; }
  MemoryKind kind() const override { return kind_; }
  int device() const { return device_; }  // the GPU of CUDA memory
  std::span<const std::uint8_t> packedRemoteKey() const override { return packed_; }

 private:
  SocketTransport& transport_;
  RegionKey key_;
  MemoryKind kind_;
  int device_;
  std::vector<std::uint8_t> packed_;
  std::unique_ptr<std::uint8_t[]> owned_;  // allocateMemory's buffer; freed after deregistering
};

class SocketRemoteKey final : public RemoteKey {
 public:
  explicit SocketRemoteKey(const RegionKey& key) : key_(key) {}
  const RegionKey& key() const { return key_; }

 private:
  RegionKey key_;
};

}  // namespace kvx::engine::socket
