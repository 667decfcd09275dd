// Fuzz target for the KV hand-off message codec (kv/handoff/kv_message.h), including the
// pool description a hello carries (model shape, layout, regions; kv::validateDescription).
//
// Input: the text of one notification payload. Properties:
//   - a refusal is PROTOCOL_ERROR with a message; nothing throws out;
//   - an accepted hello carries a pool description that validateDescription accepts and
//     whose layout can be built;
//   - round trip: the accepted message encodes to text that decodes to a message that
//     encodes to the same text.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "fuzz/fuzz_check.h"
#include "kv/handoff/kv_message.h"
#include "kv/pool/pool_description.h"
#include "kv/pool/pool_layout.h"

namespace {

using kvx::StatusCode;
namespace handoff = kvx::kv::handoff;
namespace kv = kvx::kv;

void checkPool(const kv::PoolDescription& pool) {
  KVX_FUZZ_CHECK(kv::validateDescription(pool).isOk());
  const auto layout = kv::PoolLayout::create(pool.shape, pool.layout, pool.blocks);
  KVX_FUZZ_CHECK(layout.isOk());
  KVX_FUZZ_CHECK(layout->tensorCount() == pool.tensorRegions.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto decoded = handoff::decode(kvx::fuzz::asText(data, size));
  if (!decoded.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(decoded.status(), StatusCode::kProtocolError);
    return 0;
  }
  if (const auto* hello = std::get_if<handoff::HelloMsg>(&*decoded)) checkPool(hello->pool);

  const std::string text = handoff::encode(*decoded);
  const auto again = handoff::decode(text);
  if (!again.isOk()) kvx::fuzz::fail(__FILE__, __LINE__, again.status().toString());
  KVX_FUZZ_CHECK(again->index() == decoded->index());
  KVX_FUZZ_CHECK(handoff::encode(*again) == text);
  return 0;
}
