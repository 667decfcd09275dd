#include "kvx/status.h"

#include <utility>

namespace kvx {

std::string_view toString(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kTimedOut: return "TIMED_OUT";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kPeerFailed: return "PEER_FAILED";
    case StatusCode::kProtocolError: return "PROTOCOL_ERROR";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
    case StatusCode::kTransportError: return "TRANSPORT_ERROR";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

std::string Status::toString() const {
  if (isOk()) return "OK";
  std::string text(kvx::toString(state_->code));
  text += ": ";
  text += state_->message;
  return text;
}

Status Status::withContext(std::string_view context) const {
  if (isOk()) return *this;
  std::string message(context);
  message += ": ";
  message += state_->message;
  return Status(state_->code, std::move(message));
}

Status invalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
Status notFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
Status alreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
Status failedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
Status resourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
Status timedOut(std::string m) { return {StatusCode::kTimedOut, std::move(m)}; }
Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
Status peerFailed(std::string m) { return {StatusCode::kPeerFailed, std::move(m)}; }
Status protocolError(std::string m) { return {StatusCode::kProtocolError, std::move(m)}; }
Status unauthenticated(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }
Status transportError(std::string m) { return {StatusCode::kTransportError, std::move(m)}; }
Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
Status internalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

}  // namespace kvx
