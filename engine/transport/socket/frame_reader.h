#pragma once

// FrameReader: turns a SocketStream's input into frames for a FrameHandler, one header at a
// time, each body delivered where the handler says (straight into registered memory, into a
// buffer it keeps, or dropped). Once protect() gave it the connection's receiving keys, every
// frame must be protected (frame_protection.h): a header whose tag does not match ends the
// connection before the handler sees it, a body is decrypted where it lands, and a body whose
// tag does not match ends the connection before the handler is told the frame arrived.
//
// Thread safety: none of its own; the connection that owns it calls it under the
// transport's lock.

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/transport/socket/frame_protection.h"
#include "engine/transport/socket/socket_stream.h"
#include "engine/transport/socket/socket_wire.h"
#include "kvx/result.h"

namespace kvx::engine::socket {

// Bytes one connection may take from its socket per progress() call before the others get
// their turn.
inline constexpr std::uint64_t kReadBudgetBytes = 16u << 20;

// Where a frame's body goes.
struct BodySink {
  std::uint8_t* dest = nullptr;  // the body's bytes land here, in order
  bool collect = false;          // (dest null) kept and handed to onFrame
  bool stopOnReset = false;      // stop if the peer reset the connection (no stale bytes land)
};

class FrameHandler {
 public:
  // The header of the next frame: where its body goes. An error ends the connection.
  virtual Result<BodySink> onHeader(const FrameHeader& header) = 0;
  // The whole frame arrived (`body` holds it when collected). An error ends the connection.
  virtual Status onFrame(const FrameHeader& header, std::vector<std::uint8_t> body) = 0;

 protected:
  ~FrameHandler() = default;
};

class FrameReader {
 public:
  // Hands every frame now readable to `handler`, taking at most about `budget` bytes from the
  // socket. Returns true when it stopped for the budget (more may be waiting, some of it in
  // the stream's buffer where no epoll event will announce it: call again), false when the
  // socket had nothing more; an error when the connection failed or the handler refused.
  Result<bool> pump(SocketStream& stream, FrameHandler& handler, std::uint64_t budget);

  // True between a header and the end of its body.
  bool inBody() const { return inBody_; }

  // From the next frame on, frames are protected with `receiving`.
  void protect(FrameProtection receiving) { protection_.emplace(std::move(receiving)); }

 private:
  Status integrityFailure(SocketStream& stream, const char* part) const;

  std::optional<FrameProtection> protection_;
  bool inBody_ = false;
  bool checkBody_ = false;  // the body lands somewhere: its tag is checked
  std::uint64_t tagRemaining_ = 0;
  crypto::GcmTag bodyTag_{};
  FrameHeader header_;
  BodySink sink_;
  std::uint64_t offset_ = 0;
  std::uint64_t remaining_ = 0;
  std::vector<std::uint8_t> body_;
};

}  // namespace kvx::engine::socket
