// Fuzz target for a KV agent's description of itself (kv/handoff/kv_agent_info.h), which a
// peer's metadata carries as its application description: the model shape, layout, blocks
// and region names, and resolving those names against the regions the peer exposes.
//
// Input: the application description's text. Properties:
//   - a refusal is PROTOCOL_ERROR (or NOT_FOUND: not a KV agent) with a message; nothing
//     throws out;
//   - an accepted description whose regions the peer exposes resolves to a pool that
//     validateDescription accepts and whose layout can be built, or is refused as
//     PROTOCOL_ERROR;
//   - round trip: the accepted description encodes to text that decodes to a description
//     that encodes to the same text.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "kv/handoff/kv_agent_info.h"
#include "kv/pool/pool_layout.h"

namespace {

using kvx::StatusCode;
namespace handoff = kvx::kv::handoff;
namespace kv = kvx::kv;

void checkResolves(const handoff::KvAgentInfo& info) {
  kvx::PeerInfo peer;
  peer.name = "peer";
  std::uint64_t id = 1;
  for (const std::string& name : info.regionNames) {
    kvx::RegionInfo region;
    region.id = kvx::RegionId(id++);
    region.name = name;
    peer.regions.push_back(region);
  }
  const auto pool = handoff::resolvePool(info, peer);
  if (!pool.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(pool.status(), StatusCode::kProtocolError);
    return;
  }
  KVX_FUZZ_CHECK(kv::validateDescription(*pool).isOk());
  const auto layout = kv::PoolLayout::create(pool->shape, pool->layout, pool->blocks);
  KVX_FUZZ_CHECK(layout.isOk());
  KVX_FUZZ_CHECK(layout->tensorCount() == pool->tensorRegions.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto decoded = handoff::decodeKvAgentInfo(kvx::fuzz::asText(data, size));
  if (!decoded.isOk()) {
    if (decoded.status().code() != StatusCode::kNotFound) {
      KVX_FUZZ_CHECK_REFUSAL(decoded.status(), StatusCode::kProtocolError);
    }
    return 0;
  }
  checkResolves(*decoded);
  const std::string text = handoff::encodeKvAgentInfo(*decoded);
  const auto again = handoff::decodeKvAgentInfo(text);
  if (!again.isOk()) kvx::fuzz::fail(__FILE__, __LINE__, again.status().toString());
  KVX_FUZZ_CHECK(handoff::encodeKvAgentInfo(*again) == text);
  return 0;
}
