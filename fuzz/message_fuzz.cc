// Fuzz target for the control channel's message codec (agent/channel/messages/message.h):
// hello, hello_ack, metadata_update, error, goodbye, heartbeat, rejoin and rejoin_ack (the
// authentication messages have a target of their own), and the checked JSON
// reading and metadata decoding under them.
//
// Input: byte 0 picks the frame type (the messages above, the metadata blob type and unknown
// types), the rest is the frame's payload. Properties:
//   - a refusal is PROTOCOL_ERROR with a message; nothing throws out;
//   - an accepted message has the frame's type and, if it carries metadata, metadata that
//     validateMetadata accepts;
//   - round trip: the accepted message encodes to one frame that decodes to a message that
//     encodes to the same bytes;
//   - the other way round: an error or goodbye made from any local text (a Status message
//     may hold anything) encodes to a frame the peer accepts.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/messages/message.h"
#include "agent/metadata/metadata_codec.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/single_frame.h"

namespace {

using kvx::StatusCode;
using namespace kvx::agent::channel;

// Appended to, never reordered: a seed's byte 0 keeps naming the same type.
constexpr std::uint16_t kTypes[] = {1, 2, 3, 4, 5, 0x100, 0, 6, 0xffff, 7, 8, 9, 10, 11};

void checkMetadata(const Message& message) {
  std::visit(
      [](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello> || std::is_same_v<T, HelloAck> ||
                      std::is_same_v<T, MetadataUpdate>) {
          KVX_FUZZ_CHECK(kvx::agent::metadata::validateMetadata(m.metadata, "fuzz").isOk());
        }
      },
      message);
}

void checkLocalText(const std::string& text) {
  const Message error = ErrorMessage::fromStatus(kvx::Status(StatusCode::kInternal, text));
  KVX_FUZZ_CHECK(
      std::holds_alternative<ErrorMessage>(kvx::fuzz::decodeSingleFrame(encodeMessage(error))));
  const Message goodbye = Goodbye{text};
  KVX_FUZZ_CHECK(
      std::holds_alternative<Goodbye>(kvx::fuzz::decodeSingleFrame(encodeMessage(goodbye))));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Frame frame;
  frame.type = kTypes[data[0] % std::size(kTypes)];
  frame.payload.assign(reinterpret_cast<const char*>(data + 1), size - 1);

  checkLocalText(frame.payload);

  const kvx::Result<Message> decoded = decodeMessage(frame);
  if (!decoded.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(decoded.status(), StatusCode::kProtocolError);
    return 0;
  }
  KVX_FUZZ_CHECK(static_cast<std::uint16_t>(messageType(*decoded)) == frame.type);
  checkMetadata(*decoded);

  const std::vector<std::uint8_t> bytes = encodeMessage(*decoded);
  KVX_FUZZ_CHECK(encodeMessage(kvx::fuzz::decodeSingleFrame(bytes)) == bytes);
  return 0;
}
