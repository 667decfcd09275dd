// kvx-test-labels: unit serial
#include "crypto/aes_gcm.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace kvx;
using kvx::crypto::AesGcm;

namespace {

crypto::Key256 keyOf(std::uint8_t value) {
  crypto::Key256 key{};
  key.fill(value);
  return key;
}

std::vector<std::uint8_t> bytes(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

struct Sealed {
  std::vector<std::uint8_t> text;
  crypto::GcmTag tag;
};

Sealed seal(AesGcm& cipher, std::uint64_t sequence, const std::vector<std::uint8_t>& associated,
            const std::vector<std::uint8_t>& plain) {
  Sealed out{std::vector<std::uint8_t>(plain.size()), {}};
  cipher.begin(AesGcm::Mode::kSeal, 1, sequence);
  cipher.authenticate(associated);
  cipher.crypt(plain, out.text.data());
  out.tag = cipher.sealTag();
  return out;
}

bool open(AesGcm& cipher, std::uint64_t sequence, const std::vector<std::uint8_t>& associated,
          Sealed sealed, std::vector<std::uint8_t>* plain = nullptr) {
  cipher.begin(AesGcm::Mode::kOpen, 1, sequence);
  cipher.authenticate(associated);
  cipher.crypt(sealed.text, sealed.text.data());  // in place
  if (plain != nullptr) *plain = sealed.text;
  return cipher.openTag(sealed.tag);
}

}  // namespace

TEST_CASE("aes-gcm: a sealed message opens under the same key, nonce and associated data") {
  auto sealer = AesGcm::create(keyOf(7));
  auto opener = AesGcm::create(keyOf(7));
  REQUIRE(sealer.isOk());
  REQUIRE(opener.isOk());
  const auto plain = bytes("the blocks of request 42, layer 0");
  const auto header = bytes("header");
  const Sealed sealed = seal(*sealer, 5, header, plain);
  CHECK(sealed.text != plain);  // encrypted
  std::vector<std::uint8_t> opened;
  CHECK(open(*opener, 5, header, sealed, &opened));
  CHECK(opened == plain);
}

TEST_CASE("aes-gcm: a changed byte, tag, nonce, key or associated data fails to open") {
  auto sealer = AesGcm::create(keyOf(7));
  auto opener = AesGcm::create(keyOf(7));
  auto stranger = AesGcm::create(keyOf(8));
  REQUIRE((sealer.isOk() && opener.isOk() && stranger.isOk()));
  const auto plain = bytes("sixteen bytes!!! and more");
  const auto header = bytes("header");
  const Sealed sealed = seal(*sealer, 5, header, plain);

  Sealed flipped = sealed;
  flipped.text[3] ^= 1;
  CHECK_FALSE(open(*opener, 5, header, flipped));
  Sealed badTag = sealed;
  badTag.tag[0] ^= 1;
  CHECK_FALSE(open(*opener, 5, header, badTag));
  CHECK_FALSE(open(*opener, 6, header, sealed));  // another sequence: a replay elsewhere
  CHECK_FALSE(open(*opener, 5, bytes("headeR"), sealed));
  CHECK_FALSE(open(*stranger, 5, header, sealed));
  CHECK(open(*opener, 5, header, sealed));  // the failures left the opener usable
}

TEST_CASE("aes-gcm: associated data and message may come in pieces of any size") {
  auto sealer = AesGcm::create(keyOf(3));
  auto opener = AesGcm::create(keyOf(3));
  REQUIRE((sealer.isOk() && opener.isOk()));
  std::vector<std::uint8_t> body(100000);
  for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<std::uint8_t>(i * 31);

  // Authenticated only (the body travels in clear): all of it associated data, in one piece
  // on one side and in uneven pieces on the other.
  sealer->begin(AesGcm::Mode::kSeal, 2, 9);
  sealer->authenticate(body);
  const crypto::GcmTag tag = sealer->sealTag();
  opener->begin(AesGcm::Mode::kOpen, 2, 9);
  std::span<const std::uint8_t> rest(body);
  for (std::size_t step = 1; !rest.empty(); step = step * 3 + 1) {
    const std::size_t take = std::min(step, rest.size());
    opener->authenticate(rest.first(take));
    rest = rest.subspan(take);
  }
  CHECK(opener->openTag(tag));

  // Encrypted, in pieces that do not fall on 16-byte blocks.
  std::vector<std::uint8_t> text(body.size());
  sealer->begin(AesGcm::Mode::kSeal, 2, 10);
  for (std::size_t at = 0; at < body.size(); at += 777) {
    const std::size_t take = std::min<std::size_t>(777, body.size() - at);
    sealer->crypt(std::span<const std::uint8_t>(body).subspan(at, take), text.data() + at);
  }
  const crypto::GcmTag textTag = sealer->sealTag();
  opener->begin(AesGcm::Mode::kOpen, 2, 10);
  opener->crypt(text, text.data());
  CHECK(opener->openTag(textTag));
  CHECK(text == body);
}
