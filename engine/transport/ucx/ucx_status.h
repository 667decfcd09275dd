#pragma once

// The one place that turns UCX's ucs_status_t into kvx::Status, and the typed replacements
// for UCX's status-pointer macros (UCS_PTR_IS_PTR and friends use C casts, which this
// project compiles with -Wold-style-cast as an error).

#include <ucs/type/status.h>

#include <cstdint>
#include <string_view>

#include "kvx/status.h"

namespace kvx::engine::ucx {

// Converts `status` to a kvx::Status whose message is "<what>: <UCX's own text> (UCS <n>)".
// UCS_OK becomes OK. Peer and link failures map to kPeerFailed, UCS_ERR_CANCELED to
// kCancelled, UCS_ERR_TIMED_OUT to kTimedOut, UCS_ERR_NO_MEMORY to kResourceExhausted,
// UCS_ERR_INVALID_PARAM to kInvalidArgument, unsupported features to kUnimplemented, and
// everything else to kTransportError.
Status fromUcs(ucs_status_t status, std::string_view what);

// True when the code reports that the remote side is gone or unreachable.
bool isPeerFailure(ucs_status_t status);

// A ucs_status_ptr_t is NULL (done), an error code, or a request handle.
inline bool isRequest(const void* pointer) {
  const auto value = reinterpret_cast<std::uintptr_t>(pointer);
  const auto last = static_cast<std::uintptr_t>(static_cast<std::intptr_t>(UCS_ERR_LAST));
  return value - 1 < last - 1;
}

inline bool isError(const void* pointer) {
  const auto value = reinterpret_cast<std::uintptr_t>(pointer);
  return value >= static_cast<std::uintptr_t>(static_cast<std::intptr_t>(UCS_ERR_LAST));
}

// REQUIRES: !isRequest(pointer).
inline ucs_status_t statusOf(const void* pointer) {
  return static_cast<ucs_status_t>(reinterpret_cast<std::intptr_t>(pointer));
}

}  // namespace kvx::engine::ucx
