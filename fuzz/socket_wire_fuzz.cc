// Fuzz target for what the socket transport reads from a peer before it acts: the 56-byte
// frame header (engine/transport/socket/socket_wire.h), the packed transport address and the
// packed region key (socket_address.h, socket_memory.h). The header decides where a body's
// bytes go, so a header it accepts must be exactly what the encoder makes of it.
// Properties:
//   - a refused header is PROTOCOL_ERROR, a refused address or key INVALID_ARGUMENT, each
//     with a message;
//   - an accepted header re-encodes to the same 56 bytes, and the bytes it says follow stay
//     within the type's limits;
//   - an accepted address or key packs back to the same bytes; a key's region does not wrap.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/transport/socket/socket_address.h"
#include "engine/transport/socket/socket_memory.h"
#include "engine/transport/socket/socket_wire.h"
#include "fuzz/fuzz_check.h"

namespace {

using kvx::StatusCode;
using namespace kvx::engine::socket;

void checkHeader(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kFrameHeaderBytes) return;
  const auto header = decodeFrameHeader(bytes.first(kFrameHeaderBytes));
  if (!header.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(header.status(), StatusCode::kProtocolError);
    return;
  }
  const EncodedHeader again = encodeFrameHeader(*header);
  KVX_FUZZ_CHECK(std::equal(again.begin(), again.end(), bytes.begin()));
  const std::uint64_t following = followingBytes(*header);
  if (header->type == FrameType::kMessage) {
    KVX_FUZZ_CHECK(following <= kMaxMessageBytes && header->aux <= following);
  }
  if (header->type == FrameType::kError) KVX_FUZZ_CHECK(following <= kMaxErrorTextBytes);
  if (header->type == FrameType::kHello || header->type == FrameType::kWelcome) {
    KVX_FUZZ_CHECK(following == kNonceBytes);
  }
  if (header->type == FrameType::kDone) KVX_FUZZ_CHECK(following == 0);
}

void checkAddress(std::span<const std::uint8_t> bytes) {
  const auto address = parseSocketAddress(bytes);
  if (!address.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(address.status(), StatusCode::kInvalidArgument);
    return;
  }
  KVX_FUZZ_CHECK(!address->addresses.empty() && address->addresses.size() <= kMaxAddresses);
  const std::vector<std::uint8_t> again = packSocketAddress(*address);
  KVX_FUZZ_CHECK(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
}

void checkKey(std::span<const std::uint8_t> bytes) {
  const auto key = parseRegionKey(bytes);
  if (!key.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(key.status(), StatusCode::kInvalidArgument);
    return;
  }
  KVX_FUZZ_CHECK(key->length > 0 && key->address + key->length > key->address);
  KVX_FUZZ_CHECK(key->covers(key->address, key->length));
  if (key->length < UINT64_MAX) KVX_FUZZ_CHECK(!key->covers(key->address, key->length + 1));
  const std::vector<std::uint8_t> again = packRegionKey(*key);
  KVX_FUZZ_CHECK(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  checkHeader(bytes);
  checkAddress(bytes);
  checkKey(bytes);
  return 0;
}
