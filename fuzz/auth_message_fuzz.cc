// Fuzz target for the control channel's authentication messages (auth_begin, auth_challenge,
// auth_response: agent/channel/messages/auth_*.h), the first bytes a listener with a token
// reads from an unauthenticated peer, and for the frame decoder's memory bound on the same
// bytes read as a stream.
//
// Input: byte 0 picks the frame type (the three auth messages), the rest is the payload.
// Properties:
//   - a refusal is PROTOCOL_ERROR with a message; nothing throws out;
//   - an accepted message has the frame's type and round-trips: it encodes to one frame that
//     decodes to a message that encodes to the same bytes;
//   - the payload fed to a FrameDecoder as a raw stream, in chunks, never makes it hold more
//     than twice the bytes it has received for the frame in progress.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "agent/channel/auth_proof.h"
#include "agent/channel/frame.h"
#include "agent/channel/messages/message.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/single_frame.h"

namespace {

using kvx::StatusCode;
using namespace kvx::agent::channel;

// Appended to, never reordered: a seed's byte 0 keeps naming the same type.
constexpr MessageType kTypes[] = {MessageType::kAuthBegin, MessageType::kAuthChallenge,
                                  MessageType::kAuthResponse};

void checkDecoderMemory(const std::uint8_t* data, std::size_t size) {
  FrameDecoder decoder(1u << 20);
  std::size_t offset = 0;
  std::size_t chunk = 1;
  while (offset < size) {
    const std::size_t take = std::min(chunk, size - offset);
    if (!decoder.feed(std::span<const std::uint8_t>(data + offset, take)).isOk()) return;
    offset += take;
    chunk = chunk * 3 + 1;
    KVX_FUZZ_CHECK(decoder.reservedBytes() <=
                   std::max<std::size_t>(32, 2 * decoder.bufferedBytes()));
    while (decoder.next()) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  checkDecoderMemory(data + 1, size - 1);

  Frame frame;
  frame.type = static_cast<std::uint16_t>(kTypes[data[0] % std::size(kTypes)]);
  frame.payload.assign(reinterpret_cast<const char*>(data + 1), size - 1);

  const kvx::Result<Message> decoded = decodeMessage(frame);
  if (!decoded.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(decoded.status(), StatusCode::kProtocolError);
    return 0;
  }
  KVX_FUZZ_CHECK(static_cast<std::uint16_t>(messageType(*decoded)) == frame.type);
  if (const auto* challenge = std::get_if<AuthChallenge>(&*decoded)) {
    KVX_FUZZ_CHECK(proofMatches(challenge->proof, challenge->proof));
  }
  const std::vector<std::uint8_t> bytes = encodeMessage(*decoded);
  KVX_FUZZ_CHECK(encodeMessage(kvx::fuzz::decodeSingleFrame(bytes)) == bytes);
  return 0;
}
