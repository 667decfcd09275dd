// kvx-test-labels: unit
#include "engine/transport/socket/socket_wire.h"

#include <catch2/catch.hpp>

namespace kvx::engine::socket {
namespace {

FrameHeader sample(FrameType type, std::uint64_t length, std::uint32_t aux = 0) {
  FrameHeader header;
  header.type = type;
  header.aux = aux;
  header.sequence = 42;
  header.region = 7;
  header.key = 0x1122334455667788;
  header.address = 0x7f0000001000;
  header.length = length;
  return header;
}

Status decodeStatus(const EncodedHeader& bytes) { return decodeFrameHeader(bytes).status(); }

}  // namespace

TEST_CASE("socket wire: a header survives encoding, field by field", "[socket]") {
  const FrameHeader put = sample(FrameType::kPut, 4096);
  auto back = decodeFrameHeader(encodeFrameHeader(put));
  REQUIRE(back.isOk());
  CHECK(back->type == FrameType::kPut);
  CHECK(back->sequence == 42);
  CHECK(back->region == 7);
  CHECK(back->key == 0x1122334455667788);
  CHECK(back->address == 0x7f0000001000);
  CHECK(back->length == 4096);
  CHECK(followingBytes(*back) == 4096);
  CHECK(followingBytes(sample(FrameType::kGet, 4096)) == 0);
  CHECK(followingBytes(sample(FrameType::kData, 4096)) == 4096);
}

TEST_CASE("socket wire: malformed headers are protocol errors that say why", "[socket]") {
  EncodedHeader bytes = encodeFrameHeader(sample(FrameType::kDone, 0));
  bytes[0] ^= 0xff;
  CHECK(decodeStatus(bytes).code() == StatusCode::kProtocolError);
  CHECK(decodeStatus(bytes).message().find("magic") != std::string::npos);

  bytes = encodeFrameHeader(sample(FrameType::kDone, 0));
  bytes[4] = 9;
  CHECK(decodeStatus(bytes).message().find("version 9") != std::string::npos);

  bytes = encodeFrameHeader(sample(FrameType::kDone, 0));
  bytes[5] = 200;
  CHECK(decodeStatus(bytes).message().find("unknown socket frame type 200") != std::string::npos);

  bytes = encodeFrameHeader(sample(FrameType::kDone, 0));
  bytes[13] = 1;
  CHECK(decodeStatus(bytes).message().find("padding") != std::string::npos);

  CHECK(decodeFrameHeader(std::span<const std::uint8_t>(bytes).first(10)).status().code() ==
        StatusCode::kProtocolError);
}

TEST_CASE("socket wire: each type's length is bounded", "[socket]") {
  // A hello and a welcome carry a nonce and nothing else; a hello asks for a protection.
  CHECK(
      decodeFrameHeader(encodeFrameHeader(sample(FrameType::kHello, kNonceBytes, kProtectHeaders)))
          .isOk());
  CHECK(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kWelcome, kNonceBytes))).isOk());
  CHECK(followingBytes(sample(FrameType::kHello, kNonceBytes)) == kNonceBytes);
  CHECK_FALSE(
      decodeFrameHeader(encodeFrameHeader(sample(FrameType::kHello, 0, kProtectEncrypted))).isOk());
  CHECK_FALSE(
      decodeFrameHeader(encodeFrameHeader(sample(FrameType::kHello, kNonceBytes, 4))).isOk());
  CHECK_FALSE(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kWelcome, 1))).isOk());
  CHECK_FALSE(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kPut, 0))).isOk());
  CHECK_FALSE(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kGet, 0))).isOk());
  CHECK(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kMessage, kMaxMessageBytes, 8)))
            .isOk());
  CHECK_FALSE(
      decodeFrameHeader(encodeFrameHeader(sample(FrameType::kMessage, kMaxMessageBytes + 1)))
          .isOk());
  // A message's header cannot be longer than the message.
  CHECK_FALSE(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kMessage, 4, 5))).isOk());
  const std::uint32_t invalid = static_cast<std::uint32_t>(StatusCode::kInvalidArgument);
  CHECK(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kError, 10, invalid))).isOk());
  CHECK_FALSE(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kError, 10, 0))).isOk());
  CHECK_FALSE(decodeFrameHeader(encodeFrameHeader(sample(FrameType::kError, 10, 200))).isOk());
  CHECK_FALSE(
      decodeFrameHeader(encodeFrameHeader(sample(FrameType::kError, kMaxErrorTextBytes + 1, 1)))
          .isOk());
}

}  // namespace kvx::engine::socket
