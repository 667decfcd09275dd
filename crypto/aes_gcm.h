#pragma once

// AesGcm: AES-256-GCM (libcrypto) under one key, one message at a time and streamed: begin
// with a nonce, then the associated data (authenticated, sent as it is), then the message in
// pieces (encrypted or decrypted, in place if wanted), then the tag. A message may be all
// associated data: its tag then authenticates bytes that travel in clear.
//
// The nonce is 96 bits, `domain` (u32) then `sequence` (u64). GCM is broken by a nonce used
// twice under one key: the caller keeps (domain, sequence) unique per key, e.g. with a key
// per connection and direction and a counter per message.
//
// Not thread-safe (one OpenSSL context); movable.

#include <cstdint>
#include <memory>
#include <span>

#include "crypto/key_bytes.h"
#include "kvx/result.h"

namespace kvx::crypto {

class AesGcm {
 public:
  enum class Mode { kSeal, kOpen };

  // INTERNAL when OpenSSL cannot set up the cipher.
  static Result<AesGcm> create(const Key256& key);
  AesGcm(AesGcm&&) noexcept;
  AesGcm& operator=(AesGcm&&) noexcept;
  ~AesGcm();

  // Starts a message (abandoning any unfinished one).
  void begin(Mode mode, std::uint32_t domain, std::uint64_t sequence);
  // Associated data: authenticated, not encrypted. All of it before any crypt().
  void authenticate(std::span<const std::uint8_t> data);
  // Encrypts (kSeal) or decrypts (kOpen) `in` into `out` (in.size() bytes; may be in.data()).
  void crypt(std::span<const std::uint8_t> in, std::uint8_t* out);
  // The tag of the message begun with kSeal.
  GcmTag sealTag();
  // Whether `tag` is the tag of the message begun with kOpen: false when the message, its
  // associated data, the nonce or the key differ from the sealer's.
  bool openTag(const GcmTag& tag);

 private:
  struct Context;
  explicit AesGcm(std::unique_ptr<Context> context);

  std::unique_ptr<Context> context_;
};

}  // namespace kvx::crypto
