#include "engine/transport/socket/socket_memory.h"

#include <cstring>
#include <string>

#include "engine/transport/socket/socket_transport.h"

namespace kvx::engine::socket {
namespace {

constexpr std::uint32_t kKeyMagic = 0x6b58564b;  // the bytes "KVXk" (little-endian)
constexpr std::uint8_t kKeyVersion = 1;
constexpr std::size_t kPackedBytes = 8 + 4 * 8;

}  // namespace

std::vector<std::uint8_t> packRegionKey(const RegionKey& key) {
  std::vector<std::uint8_t> out(kPackedBytes, 0);
  std::memcpy(out.data(), &kKeyMagic, 4);
  out[4] = kKeyVersion;
  std::memcpy(out.data() + 8, &key.region, 8);
  std::memcpy(out.data() + 16, &key.secret, 8);
  std::memcpy(out.data() + 24, &key.address, 8);
  std::memcpy(out.data() + 32, &key.length, 8);
  return out;
}

Result<RegionKey> parseRegionKey(std::span<const std::uint8_t> packed) {
  const std::string what = "socket remote key of " + std::to_string(packed.size()) + " bytes";
  if (packed.size() != kPackedBytes) {
    return invalidArgument(what + ": a packed key is " + std::to_string(kPackedBytes) + " bytes");
  }
  std::uint32_t magic = 0;
  std::memcpy(&magic, packed.data(), 4);
  if (magic != kKeyMagic) return invalidArgument(what + " has the wrong magic");
  if (packed[4] != kKeyVersion) {
    return invalidArgument(what + " has version " + std::to_string(packed[4]) +
                           "; this build reads " + std::to_string(kKeyVersion));
  }
  if (packed[5] != 0 || packed[6] != 0 || packed[7] != 0) {
    return invalidArgument(what + " has non-zero padding");
  }
  RegionKey key;
  std::memcpy(&key.region, packed.data() + 8, 8);
  std::memcpy(&key.secret, packed.data() + 16, 8);
  std::memcpy(&key.address, packed.data() + 24, 8);
  std::memcpy(&key.length, packed.data() + 32, 8);
  if (key.length == 0 || key.address + key.length < key.address) {
    return invalidArgument(what + " names an empty or wrapping region");
  }
  return key;
}

SocketMemory::SocketMemory(SocketTransport& transport, const RegionKey& key, MemoryKind kind,
                           int device, std::unique_ptr<std::uint8_t[]> owned)
    : transport_(transport),
      key_(key),
      kind_(kind),
      device_(device),
      packed_(packRegionKey(key)),
      owned_(std::move(owned)) {}

SocketMemory::~SocketMemory() { transport_.deregister(key_.region); }

}  // namespace kvx::engine::socket
