// Fuzz target for the control channel's frame decoder (agent/channel/frame.h).
//
// Input: byte 0 seeds the chunk sizes, the rest is the byte stream a peer sent. Properties:
//   - feeding the stream whole or in chunks of 1..32 bytes gives the same frames, status and
//     buffered bytes (a TCP peer chooses how its bytes are cut);
//   - a refusal is PROTOCOL_ERROR with a message, and sticks;
//   - the decoder never holds more than one header and one maximal payload;
//   - while the stream is accepted, re-encoding the frames gives back exactly the bytes they
//     came from, and decoding that again gives the same frames.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "agent/channel/frame.h"
#include "fuzz/fuzz_check.h"

namespace {

using kvx::Status;
using kvx::StatusCode;
using kvx::agent::channel::encodeFrame;
using kvx::agent::channel::Frame;
using kvx::agent::channel::FrameDecoder;
using kvx::agent::channel::kFrameHeaderBytes;

// Small enough to reach the size check quickly, large enough for real metadata.
constexpr std::uint32_t kMaxPayload = 64 * 1024;

struct Outcome {
  Status status;
  std::vector<Frame> frames;
  std::size_t buffered = 0;
  bool midFrame = false;
};

bool sameFrames(const std::vector<Frame>& a, const std::vector<Frame>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].payload != b[i].payload) return false;
  }
  return true;
}

void drain(FrameDecoder& decoder, std::vector<Frame>& frames) {
  while (std::optional<Frame> frame = decoder.next()) frames.push_back(std::move(*frame));
}

// Feeds `stream` in chunks whose sizes come from a generator seeded with `seed`; seed 0
// feeds it whole. Frames are taken after every chunk, as the connection does.
Outcome decode(std::span<const std::uint8_t> stream, std::uint8_t seed) {
  FrameDecoder decoder(kMaxPayload);
  Outcome out;
  std::uint32_t state = seed;
  while (!stream.empty()) {
    state = state * 1103515245u + 12345u;
    const std::size_t chunk = seed == 0 ? stream.size() : 1 + (state >> 16) % 32;
    const std::span<const std::uint8_t> piece = stream.first(std::min(chunk, stream.size()));
    stream = stream.subspan(piece.size());
    const Status status = decoder.feed(piece);
    drain(decoder, out.frames);
    KVX_FUZZ_CHECK(decoder.bufferedBytes() <= kFrameHeaderBytes + kMaxPayload);
    if (!status.isOk()) {
      KVX_FUZZ_CHECK_REFUSAL(status, StatusCode::kProtocolError);
      KVX_FUZZ_CHECK(decoder.feed(stream) == status);  // a failed decoder stays failed
      KVX_FUZZ_CHECK(!decoder.next());
      out.status = status;
      break;
    }
  }
  out.buffered = decoder.bufferedBytes();
  out.midFrame = decoder.midFrame();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> stream(data + 1, size - 1);
  const Outcome whole = decode(stream, 0);
  const Outcome chunked = decode(stream, data[0] == 0 ? 1 : data[0]);
  KVX_FUZZ_CHECK(whole.status == chunked.status);
  KVX_FUZZ_CHECK(sameFrames(whole.frames, chunked.frames));
  KVX_FUZZ_CHECK(whole.buffered == chunked.buffered);
  KVX_FUZZ_CHECK(whole.midFrame == chunked.midFrame);
  KVX_FUZZ_CHECK(whole.midFrame == (whole.buffered > 0));
  if (!whole.status.isOk()) return 0;

  std::vector<std::uint8_t> encoded;
  for (const Frame& frame : whole.frames) {
    const std::vector<std::uint8_t> bytes = encodeFrame(frame.type, frame.payload);
    encoded.insert(encoded.end(), bytes.begin(), bytes.end());
  }
  KVX_FUZZ_CHECK(encoded.size() + whole.buffered == stream.size());
  KVX_FUZZ_CHECK(std::equal(encoded.begin(), encoded.end(), stream.begin()));
  const Outcome again = decode(encoded, 0);
  KVX_FUZZ_CHECK(again.status.isOk() && !again.midFrame);
  KVX_FUZZ_CHECK(sameFrames(again.frames, whole.frames));
  return 0;
}
