#pragma once

// Where the control channel's shared secret comes from. The token itself is never logged:
// messages name the file or the variable, not the value.
// Stateless; thread-safe except that it reads the environment (getenv).

#include <cstddef>
#include <string>

#include "kvx/result.h"

namespace kvx::agent::channel {

// The environment variable consulted when no token and no token file is given.
inline constexpr const char* kAuthTokenVariable = "KVX_AUTH_TOKEN";
// Shorter tokens are refused: with HMAC-SHA256 a token is as strong as it is unguessable.
inline constexpr std::size_t kMinAuthTokenBytes = 16;
// A token file larger than this is not a token.
inline constexpr std::size_t kMaxAuthTokenBytes = 4096;

// The token to use: `token` if not empty; else the contents of `tokenFile` if one is named
// (trailing whitespace, e.g. the newline of `openssl rand -hex 32 > FILE`, stripped; a
// warning is logged when the file is readable by group or others); else $KVX_AUTH_TOKEN;
// else "" (no authentication). NOT_FOUND for a file that cannot be read, INVALID_ARGUMENT
// for an empty or oversized one.
Result<std::string> resolveAuthToken(const std::string& token, const std::string& tokenFile);

}  // namespace kvx::agent::channel
