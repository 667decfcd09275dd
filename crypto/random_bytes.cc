#include "crypto/random_bytes.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include <string>

namespace kvx::crypto {

Status randomBytes(std::span<std::uint8_t> out, const char* what) {
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) == 1) return Status::ok();
  char text[256] = {};
  ERR_error_string_n(ERR_get_error(), text, sizeof text);
  return internalError(std::string("RAND_bytes failed to make ") + what + ": " + text);
}

}  // namespace kvx::crypto
