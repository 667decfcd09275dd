#pragma once

// Bytes from the system's CSPRNG (libcrypto's RAND_bytes). Thread-safe.

#include <cstdint>
#include <span>

#include "kvx/status.h"

namespace kvx::crypto {

// Fills `out`; INTERNAL naming OpenSSL's reason if the generator fails (`what` says what the
// bytes were for).
Status randomBytes(std::span<std::uint8_t> out, const char* what);

}  // namespace kvx::crypto
