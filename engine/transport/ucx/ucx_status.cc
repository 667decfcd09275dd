#include "engine/transport/ucx/ucx_status.h"

#include <string>

namespace kvx::engine::ucx {

bool isPeerFailure(ucs_status_t status) {
  switch (status) {
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_REJECTED: return true;
    default: break;
  }
  const int code = static_cast<int>(status);
  const bool link = code <= UCS_ERR_FIRST_LINK_FAILURE && code >= UCS_ERR_LAST_LINK_FAILURE;
  const bool endpoint =
      code <= UCS_ERR_FIRST_ENDPOINT_FAILURE && code >= UCS_ERR_LAST_ENDPOINT_FAILURE;
  return link || endpoint;
}

Status fromUcs(ucs_status_t status, std::string_view what) {
  if (status == UCS_OK) return Status::ok();
  std::string message(what);
  message += ": ";
  message += ucs_status_string(status);
  message += " (UCS " + std::to_string(static_cast<int>(status)) + ")";

  StatusCode code = StatusCode::kTransportError;
  if (isPeerFailure(status)) {
    code = StatusCode::kPeerFailed;
  } else {
    switch (status) {
      case UCS_ERR_CANCELED: code = StatusCode::kCancelled; break;
      case UCS_ERR_TIMED_OUT: code = StatusCode::kTimedOut; break;
      case UCS_ERR_NO_MEMORY:
      case UCS_ERR_EXCEEDS_LIMIT: code = StatusCode::kResourceExhausted; break;
      case UCS_ERR_INVALID_PARAM:
      case UCS_ERR_INVALID_ADDR:
      case UCS_ERR_OUT_OF_RANGE: code = StatusCode::kInvalidArgument; break;
      case UCS_ERR_UNSUPPORTED:
      case UCS_ERR_NOT_IMPLEMENTED: code = StatusCode::kUnimplemented; break;
      default: break;
    }
  }
  return Status(code, std::move(message));
}

}  // namespace kvx::engine::ucx
