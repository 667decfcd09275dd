// Fuzz target for the header of data-path notification messages
// (engine/notify/notification_header.h), which arrives from a peer as UCX active-message
// header bytes. Properties:
//   - a refusal is PROTOCOL_ERROR with a message;
//   - an accepted header is exactly the encoding of the sender it names (the format has one
//     encoding per name);
//   - the other way round: any name up to 65,535 bytes encodes to a header that decodes to it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/notify/notification_header.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  const auto sender = kvx::engine::decodeNotificationHeader(bytes);
  if (sender.isOk()) {
    const std::vector<std::uint8_t> encoded = kvx::engine::encodeNotificationHeader(*sender);
    KVX_FUZZ_CHECK(std::equal(encoded.begin(), encoded.end(), bytes.begin(), bytes.end()));
  } else {
    KVX_FUZZ_CHECK_REFUSAL(sender.status(), kvx::StatusCode::kProtocolError);
  }

  const std::string name(kvx::fuzz::asText(data, size));
  const auto back =
      kvx::engine::decodeNotificationHeader(kvx::engine::encodeNotificationHeader(name));
  KVX_FUZZ_CHECK(back.isOk() && *back == name);
  return 0;
}
