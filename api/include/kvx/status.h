#pragma once

// kvx's one error type. Every fallible call in the project returns a Status or a Result<T>;
// no exceptions cross a module boundary and no integer error codes stand beside it.
// Foreign errors (ucs_status_t, CUDA, Asio) are converted in exactly one place each,
// keeping their original text in the message.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller passed something malformed or out of bounds
  kNotFound,            // unknown region, peer, transfer or list
  kAlreadyExists,       // duplicate name or id, overlapping region
  kFailedPrecondition,  // the object is not in a state that allows the call
  kResourceExhausted,   // a limit was reached (frame size, queue depth, memory)
  kTimedOut,            // a deadline passed
  kCancelled,           // the caller cancelled the operation
  kPeerFailed,          // the remote agent died, hung or became unreachable
  kProtocolError,       // a peer sent bytes that do not follow the wire protocol
  kUnauthenticated,     // a peer failed authentication
  kTransportError,      // the data path (UCX) reported an error
  kUnimplemented,       // the feature is not built in or not supported here
  kInternal,            // a bug in kvx: report it
};

std::string_view toString(StatusCode code);

class [[nodiscard]] Status {
 public:
  // The OK status; cheap to construct and copy (no allocation).
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status ok() { return Status(); }

  bool isOk() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  const std::string& message() const;

  // "TIMED_OUT: transfer 7 did not complete within 2000 ms".
  std::string toString() const;

  // A copy whose message is "<context>: <message>"; OK stays OK.
  Status withContext(std::string_view context) const;

  // Marks the status as deliberately unused.
  void ignore() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null means OK
};

// Constructors named after the codes, for call sites that read like prose.
Status invalidArgument(std::string message);
Status notFound(std::string message);
Status alreadyExists(std::string message);
Status failedPrecondition(std::string message);
Status resourceExhausted(std::string message);
Status timedOut(std::string message);
Status cancelled(std::string message);
Status peerFailed(std::string message);
Status protocolError(std::string message);
Status unauthenticated(std::string message);
Status transportError(std::string message);
Status unimplemented(std::string message);
Status internalError(std::string message);

}  // namespace kvx
#pragma GCC visibility pop

#define KVX_STATUS_CONCAT_INNER(a, b) a##b
#define KVX_STATUS_CONCAT(a, b) KVX_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define KVX_RETURN_IF_ERROR(expr)                \
  do {                                           \
    ::kvx::Status kvx_status_ = (expr);          \
    if (!kvx_status_.isOk()) return kvx_status_; \
  } while (false)

// Evaluates `expr` (a Result<T>); returns its Status on error, else moves the value into `lhs`.
#define KVX_ASSIGN_OR_RETURN(lhs, expr) \
  KVX_ASSIGN_OR_RETURN_IMPL(KVX_STATUS_CONCAT(kvx_result_, __LINE__), lhs, expr)
#define KVX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)  \
  auto tmp = (expr);                               \
  if (!tmp.isOk()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()
