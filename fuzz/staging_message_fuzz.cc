// Fuzz target for the payloads of target-side staging messages
// (engine/staged/staging_message.h), which arrive from a peer as UCX active-message payloads.
// Properties:
//   - a refusal is PROTOCOL_ERROR with a message;
//   - an accepted request is exactly the encoding of what it decoded to (one encoding each);
//   - an accepted reply decodes to the same reply again after encoding (a failure's status
//     code may be normalised, so the bytes may differ).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/staged/staging_message.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kvx::engine;
  const std::span<const std::uint8_t> bytes(data, size);

  const auto request = decodeStagingRequest(bytes);
  if (request.isOk()) {
    const std::vector<std::uint8_t> encoded = encodeStagingRequest(*request);
    KVX_FUZZ_CHECK(std::equal(encoded.begin(), encoded.end(), bytes.begin(), bytes.end()));
  } else {
    KVX_FUZZ_CHECK_REFUSAL(request.status(), kvx::StatusCode::kProtocolError);
  }

  const auto reply = decodeStagingReply(bytes);
  if (reply.isOk()) {
    const auto again = decodeStagingReply(encodeStagingReply(*reply));
    KVX_FUZZ_CHECK(again.isOk() && again->kind == reply->kind && again->slot == reply->slot &&
                   again->requestId == reply->requestId &&
                   again->status.code() == reply->status.code());
  } else {
    KVX_FUZZ_CHECK_REFUSAL(reply.status(), kvx::StatusCode::kProtocolError);
  }
  return 0;
}
