#include "engine/transport/ucx/ucx_remote_key.h"

#include <cstring>
#include <string>

#include "engine/transport/ucx/ucx_endpoint.h"

namespace kvx::engine::ucx {
namespace {

constexpr std::uint32_t kMagic = 0x5258564b;  // the bytes "KVXR" on a little-endian host
constexpr std::uint16_t kVersion = 1;
constexpr std::size_t kHeaderSize = 4 + 2 + 2 + 8 + 8;
constexpr std::size_t kTrailerSize = 8;

std::uint64_t fnv1a(std::span<const std::uint8_t> bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (std::uint8_t b : bytes) {
    hash ^= b;
    hash *= 1099511628211ull;
  }
  return hash;
}

template <typename T>
void put(std::vector<std::uint8_t>& out, std::size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}

template <typename T>
T get(std::span<const std::uint8_t> in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

}  // namespace

std::vector<std::uint8_t> packRemoteKey(std::uint64_t address, std::uint64_t length,
                                        std::span<const std::uint8_t> ucxKey) {
  const std::size_t body = kHeaderSize + ucxKey.size();
  std::vector<std::uint8_t> out(body + kTrailerSize);
  put(out, 0, kMagic);
  put(out, 4, kVersion);
  put(out, 6, static_cast<std::uint16_t>(ucxKey.size()));
  put(out, 8, address);
  put(out, 16, length);
  if (!ucxKey.empty()) std::memcpy(out.data() + kHeaderSize, ucxKey.data(), ucxKey.size());
  put(out, body, fnv1a(std::span<const std::uint8_t>(out).first(body)));
  return out;
}

Result<PackedRemoteKey> parseRemoteKey(std::span<const std::uint8_t> packed) {
  const std::string what = "packed remote key of " + std::to_string(packed.size()) + " bytes";
  if (packed.size() < kHeaderSize + kTrailerSize) {
    return invalidArgument(what + " is shorter than the " +
                           std::to_string(kHeaderSize + kTrailerSize) +
                           "-byte minimum: not a UCX transport key");
  }
  if (get<std::uint32_t>(packed, 0) != kMagic) {
    return invalidArgument(what + " does not start with the UCX transport key magic");
  }
  if (get<std::uint16_t>(packed, 4) != kVersion) {
    return invalidArgument(what + " has version " +
                           std::to_string(get<std::uint16_t>(packed, 4)) + ", expected " +
                           std::to_string(kVersion));
  }
  const std::size_t ucxLength = get<std::uint16_t>(packed, 6);
  if (packed.size() != kHeaderSize + ucxLength + kTrailerSize) {
    return invalidArgument(what + " should be " +
                           std::to_string(kHeaderSize + ucxLength + kTrailerSize) +
                           " bytes for a " + std::to_string(ucxLength) + "-byte UCX key");
  }
  const std::size_t body = kHeaderSize + ucxLength;
  if (get<std::uint64_t>(packed, body) != fnv1a(packed.first(body))) {
    return invalidArgument(what + " fails its checksum (corrupted or truncated)");
  }
  PackedRemoteKey key;
  key.address = get<std::uint64_t>(packed, 8);
  key.length = get<std::uint64_t>(packed, 16);
  key.ucxKey = packed.subspan(kHeaderSize, ucxLength);
  return key;
}

UcxRemoteKey::~UcxRemoteKey() {
  std::lock_guard<std::mutex> lock(endpoint_->worker().mutex());
  releaseLocked();
  endpoint_->forgetKeyLocked(this);
}

void UcxRemoteKey::releaseLocked() {
  if (handle_ == nullptr) return;
  ucp_rkey_destroy(handle_);
  handle_ = nullptr;
}

}  // namespace kvx::engine::ucx
