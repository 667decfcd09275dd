// Fuzz target for metadata blobs (agent/metadata/metadata_codec.h): one kMetadataBlob frame
// wrapping a peer's metadata JSON, as Agent::loadPeerMetadata reads it.
//
// Unpacking the packed remote keys and the data address needs a UCX endpoint; this target
// stops before that, at the checks that run first: the blob's own validation, and the
// framing check (engine/transport/ucx/ucx_frame.h) that a UCX endpoint applies to each key and
// to the address before UCX parses them. Properties:
//   - a refusal is PROTOCOL_ERROR with a message (the framing check: INVALID_ARGUMENT);
//   - accepted metadata passes validateMetadata;
//   - round trip: re-encoding the metadata gives a blob that decodes to metadata that
//     re-encodes to the same bytes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "agent/metadata/metadata_codec.h"
#include "engine/transport/ucx/ucx_frame.h"
#include "fuzz/fuzz_check.h"

namespace {

using kvx::StatusCode;
using kvx::agent::metadata::decodeMetadataBlob;
using kvx::agent::metadata::encodeMetadataBlob;

void checkUcxFraming(std::uint32_t magic, std::span<const std::uint8_t> framed) {
  auto body = kvx::engine::ucx::unframe(magic, framed, "fuzzed blob");
  if (!body.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(body.status(), StatusCode::kInvalidArgument);
    return;
  }
  KVX_FUZZ_CHECK(body->data() >= framed.data() &&
                 body->data() + body->size() <= framed.data() + framed.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto decoded = decodeMetadataBlob(std::span<const std::uint8_t>(data, size));
  if (!decoded.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(decoded.status(), StatusCode::kProtocolError);
    return 0;
  }
  KVX_FUZZ_CHECK(kvx::agent::metadata::validateMetadata(*decoded, "metadata").isOk());
  checkUcxFraming(kvx::engine::ucx::kAddressMagic, decoded->dataAddress);
  for (const kvx::engine::RegionMetadata& region : decoded->regions) {
    checkUcxFraming(kvx::engine::ucx::kRemoteKeyMagic, region.packedKey);
  }

  const std::vector<std::uint8_t> blob = encodeMetadataBlob(*decoded);
  const auto again = decodeMetadataBlob(blob);
  if (!again.isOk()) kvx::fuzz::fail(__FILE__, __LINE__, again.status().toString());
  KVX_FUZZ_CHECK(encodeMetadataBlob(*again) == blob);
  return 0;
}
