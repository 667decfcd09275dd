#include "engine/transport/socket/frame_protection.h"

#include <string_view>
#include <vector>

#include "crypto/hmac_sha256.h"
#include "crypto/random_bytes.h"

namespace kvx::engine::socket {
namespace {

constexpr std::uint32_t kHeaderDomain = 1;
constexpr std::uint32_t kBodyDomain = 2;

void appendBigEndian(std::vector<std::uint8_t>& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

crypto::Key256 directionKey(const crypto::Key256& dataKey, std::string_view label,
                            const ConnectionIdentity& identity) {
  std::vector<std::uint8_t> data(label.begin(), label.end());
  appendBigEndian(data, identity.protection, 4);
  data.insert(data.end(), identity.initiatorNonce.begin(), identity.initiatorNonce.end());
  data.insert(data.end(), identity.targetNonce.begin(), identity.targetNonce.end());
  appendBigEndian(data, identity.initiatorInstance, 8);
  appendBigEndian(data, identity.targetInstance, 8);
  return crypto::hmacSha256(dataKey, data);
}

}  // namespace

Result<ConnectionProtection> protectConnection(const crypto::Key256& dataKey,
                                               const ConnectionIdentity& identity,
                                               ConnectionEnd end) {
  const crypto::Key256 toTarget = directionKey(dataKey, "kvx-data-i2t", identity);
  const crypto::Key256 toInitiator = directionKey(dataKey, "kvx-data-t2i", identity);
  const bool initiator = end == ConnectionEnd::kInitiator;
  KVX_ASSIGN_OR_RETURN(
      FrameProtection sending,
      FrameProtection::create(initiator ? toTarget : toInitiator, identity.protection));
  KVX_ASSIGN_OR_RETURN(
      FrameProtection receiving,
      FrameProtection::create(initiator ? toInitiator : toTarget, identity.protection));
  return ConnectionProtection{std::move(sending), std::move(receiving)};
}

Result<Nonce> freshNonce() {
  Nonce nonce{};
  KVX_RETURN_IF_ERROR(crypto::randomBytes(nonce, "a socket data connection nonce"));
  return nonce;
}

Result<FrameProtection> FrameProtection::create(const crypto::Key256& key,
                                                std::uint32_t protection) {
  KVX_ASSIGN_OR_RETURN(crypto::AesGcm cipher, crypto::AesGcm::create(key));
  return FrameProtection(std::move(cipher), protection);
}

crypto::GcmTag FrameProtection::sealHeader(EncodedHeader& header) {
  cipher_.begin(crypto::AesGcm::Mode::kSeal, kHeaderDomain, sequence_);
  cipher_.crypt(header, header.data());
  return cipher_.sealTag();
}

void FrameProtection::beginBody() {
  cipher_.begin(crypto::AesGcm::Mode::kSeal, kBodyDomain, sequence_);
}

void FrameProtection::throughCipher(std::span<const std::uint8_t> in, std::uint8_t* out) {
  if (encrypts()) {
    cipher_.crypt(in, out);
  } else {
    cipher_.authenticate(in);
  }
}

void FrameProtection::sealBody(std::span<const std::uint8_t> in, std::uint8_t* out) {
  throughCipher(in, out);
}

crypto::GcmTag FrameProtection::sealBodyTag() { return cipher_.sealTag(); }

bool FrameProtection::openHeader(std::span<const std::uint8_t> sealed, const crypto::GcmTag& tag,
                                 EncodedHeader& header) {
  cipher_.begin(crypto::AesGcm::Mode::kOpen, kHeaderDomain, sequence_);
  cipher_.crypt(sealed, header.data());
  if (!cipher_.openTag(tag)) return false;
  cipher_.begin(crypto::AesGcm::Mode::kOpen, kBodyDomain, sequence_);
  return true;
}

void FrameProtection::openBody(std::uint8_t* bytes, std::uint64_t size) {
  throughCipher({bytes, size}, bytes);
}

bool FrameProtection::openBodyTag(const crypto::GcmTag& tag) { return cipher_.openTag(tag); }

}  // namespace kvx::engine::socket
