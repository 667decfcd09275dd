#include "api/c/c_api_boundary.h"

#include <cstdlib>
#include <cstring>

namespace kvx::c_api {
namespace {

thread_local std::string lastError;

}  // namespace

kvx_status report(const Status& status) {
  if (!status.isOk()) lastError = status.toString();
  return static_cast<kvx_status>(status.code());
}

kvx_status nullArgument(std::string_view function, std::string_view argument) {
  return report(
      invalidArgument(std::string(function) + ": `" + std::string(argument) + "` is NULL"));
}

char* copyString(std::string_view text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) return nullptr;
  std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  return copy;
}

std::uint8_t* copyBytes(std::span<const std::uint8_t> bytes) {
  auto* copy = static_cast<std::uint8_t*>(std::malloc(bytes.empty() ? 1 : bytes.size()));
  if (copy != nullptr && !bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
  return copy;
}

}  // namespace kvx::c_api

extern "C" {

const char* kvx_last_error(void) { return kvx::c_api::lastError.c_str(); }

const char* kvx_status_name(kvx_status code) {
  const int raw = kvx::c_api::rawValue(code);
  if (raw < KVX_OK || raw > KVX_INTERNAL) return "UNKNOWN";
  return kvx::toString(static_cast<kvx::StatusCode>(raw)).data();
}

void kvx_free(void* pointer) { std::free(pointer); }

}  // extern "C"

// The C codes are kvx::StatusCode's values.
static_assert(KVX_OK == static_cast<int>(kvx::StatusCode::kOk));
static_assert(KVX_INVALID_ARGUMENT == static_cast<int>(kvx::StatusCode::kInvalidArgument));
static_assert(KVX_NOT_FOUND == static_cast<int>(kvx::StatusCode::kNotFound));
static_assert(KVX_ALREADY_EXISTS == static_cast<int>(kvx::StatusCode::kAlreadyExists));
static_assert(KVX_FAILED_PRECONDITION == static_cast<int>(kvx::StatusCode::kFailedPrecondition));
static_assert(KVX_RESOURCE_EXHAUSTED == static_cast<int>(kvx::StatusCode::kResourceExhausted));
static_assert(KVX_TIMED_OUT == static_cast<int>(kvx::StatusCode::kTimedOut));
static_assert(KVX_CANCELLED == static_cast<int>(kvx::StatusCode::kCancelled));
static_assert(KVX_PEER_FAILED == static_cast<int>(kvx::StatusCode::kPeerFailed));
static_assert(KVX_PROTOCOL_ERROR == static_cast<int>(kvx::StatusCode::kProtocolError));
static_assert(KVX_UNAUTHENTICATED == static_cast<int>(kvx::StatusCode::kUnauthenticated));
static_assert(KVX_TRANSPORT_ERROR == static_cast<int>(kvx::StatusCode::kTransportError));
static_assert(KVX_UNIMPLEMENTED == static_cast<int>(kvx::StatusCode::kUnimplemented));
static_assert(KVX_INTERNAL == static_cast<int>(kvx::StatusCode::kInternal));
