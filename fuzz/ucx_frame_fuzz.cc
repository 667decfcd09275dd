// Fuzz target for the frame around the blobs a UCX transport hands to its peers
// (engine/transport/ucx/ucx_frame.h: worker addresses, packed remote keys). It is the check
// that stands between a peer's bytes and UCX's own parsers, which trust their input.
// Properties, for both magics:
//   - a refusal is INVALID_ARGUMENT with a message;
//   - an accepted frame is exactly frame(magic, body) for the body it returns, and that body
//     lies inside the input;
//   - the other way round: any body framed unframes to itself, and the frame is refused when
//     cut by one byte or read with the other magic.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/transport/ucx/ucx_frame.h"
#include "fuzz/fuzz_check.h"

namespace {

using kvx::StatusCode;
using namespace kvx::engine::ucx;

void checkDecode(std::uint32_t magic, std::span<const std::uint8_t> framed) {
  const auto body = unframe(magic, framed, "fuzzed blob");
  if (!body.isOk()) {
    KVX_FUZZ_CHECK_REFUSAL(body.status(), StatusCode::kInvalidArgument);
    return;
  }
  KVX_FUZZ_CHECK(body->data() >= framed.data() &&
                 body->data() + body->size() <= framed.data() + framed.size());
  const std::vector<std::uint8_t> again = frame(magic, *body);
  KVX_FUZZ_CHECK(std::equal(again.begin(), again.end(), framed.begin(), framed.end()));
}

void checkEncode(std::uint32_t magic, std::uint32_t other, std::span<const std::uint8_t> body) {
  const std::vector<std::uint8_t> framed = frame(magic, body);
  const auto back = unframe(magic, framed, "framed body");
  KVX_FUZZ_CHECK(back.isOk());
  KVX_FUZZ_CHECK(std::equal(back->begin(), back->end(), body.begin(), body.end()));
  const std::span<const std::uint8_t> cut(framed.data(), framed.size() - 1);
  KVX_FUZZ_CHECK_REFUSAL(unframe(magic, cut, "cut frame").status(), StatusCode::kInvalidArgument);
  KVX_FUZZ_CHECK_REFUSAL(unframe(other, framed, "foreign frame").status(),
                         StatusCode::kInvalidArgument);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  checkDecode(kAddressMagic, bytes);
  checkDecode(kRemoteKeyMagic, bytes);
  checkEncode(kAddressMagic, kRemoteKeyMagic, bytes);
  checkEncode(kRemoteKeyMagic, kAddressMagic, bytes);
  return 0;
}
