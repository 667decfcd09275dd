// Fuzz target for the KV hand-off message codec (kv/handoff/kv_message.h). The pool
// description a peer sends has a target of its own (kv_agent_info_fuzz.cc).
//
// Input: the text of one notification payload. Properties:
//   - a refusal is PROTOCOL_ERROR with a message; nothing throws out;
//   - round trip: the accepted message encodes to text that decodes to a message that
//     encodes to the same text.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "kv/handoff/kv_message.h"

namespace {

using kvx::StatusCode;
namespace handoff = kvx::kv::handoff;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto decoded = handoff::decode(kvx::fuzz::asText(data, size));
  if (!decoded.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(decoded.status(), StatusCode::kProtocolError);
    return 0;
  }
  const std::string text = handoff::encode(*decoded);
  const auto again = handoff::decode(text);
  if (!again.isOk()) kvx::fuzz::fail(__FILE__, __LINE__, again.status().toString());
  KVX_FUZZ_CHECK(again->index() == decoded->index());
  KVX_FUZZ_CHECK(handoff::encode(*again) == text);
  return 0;
}
