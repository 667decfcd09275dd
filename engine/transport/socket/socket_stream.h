#pragma once

// SocketStream: the byte-moving half of one data connection. A non-blocking TCP socket, a
// queue of outgoing frames whose data is written from where it lies (no copy into a send
// buffer), and an input buffer from which small frames are parsed; large bodies are read
// straight into their destination.
//
// Thread safety: none of its own; its owner calls it under the transport's lock.

#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "engine/transport/socket/frame_protection.h"
#include "engine/transport/socket/socket_wire.h"
#include "kvx/result.h"

namespace kvx::engine::socket {

// A protected body is sealed (and opened) this much at a time, so that the cipher reads bytes
// the socket's copy has just touched.
inline constexpr std::uint64_t kSealPieceBytes = 256u << 10;

class SocketStream {
 public:
  // Takes ownership of `fd` (a non-blocking TCP socket). `peer` names it in errors.
  SocketStream(int fd, std::string peer);
  ~SocketStream();
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  // Sets the options every data connection gets: no Nagle delay, and keepalive plus a user
  // timeout, so that a connection to a host that died without a reset fails on its own.
  static void configureSocket(int fd);
  // Replaces the socket (a connect retried on the next address). REQUIRES: nothing was
  // written or read on the old one.
  void adoptSocket(int fd, std::string peer);

  // Output. `first` and `second` are not copied: they must stay valid until the frame is
  // written, which the operation's completion (always later) guarantees. `tag` marks frames
  // whose data lies in a registered region (its id), so that a deregistration can find them.
  void queue(const FrameHeader& header, std::span<const std::uint8_t> first = {},
             std::span<const std::uint8_t> second = {}, std::uint64_t tag = 0);
  // A frame whose body (an error's text, bytes copied out of GPU memory) the stream keeps.
  void queueOwned(const FrameHeader& header, std::string body);
  // A frame that goes out as it is, before the connection's keys exist: a hello, a welcome,
  // the refusal of a hello. Every other frame is protected (frame_protection.h): it is held
  // until protect() gives the stream its sending keys, and sealed as it is written: a body
  // in pieces of kSealPieceBytes, each sealed just before it goes out (while the bytes are
  // in cache for the socket's copy), encrypted into a buffer of one piece when it lies in
  // the caller's memory.
  void queuePlain(const FrameHeader& header, std::string body);
  void protect(FrameProtection sending) { protection_.emplace(std::move(sending)); }
  // Whether there is output to write now (frames held for the keys do not count).
  bool hasOutput() const {
    return !output_.empty() &&
           (protection_ || output_.front().plain || output_.front().headerSealed);
  }
  std::size_t queuedFrames() const { return output_.size(); }
  bool hasQueuedTag(std::uint64_t tag) const;
  // Writes what the socket takes now. PEER_FAILED when the connection failed.
  Status writeSome();

  // Input. Reads what the socket has into the buffer: true if bytes came, false if none are
  // available now, PEER_FAILED when the connection ended or failed.
  Result<bool> fill();
  std::span<const std::uint8_t> buffered() const {
    return std::span<const std::uint8_t>(input_.get() + begin_, end_ - begin_);
  }
  void consume(std::size_t bytes) { begin_ += bytes; }
  // Moves up to `want` bytes to `dest` (null: drops them): the buffer's first, then straight
  // from the socket. Returns how many; 0 when none are available now.
  Result<std::uint64_t> readInto(std::uint8_t* dest, std::uint64_t want);
  // Bytes taken from the socket since the last call (for fairness between connections).
  std::uint64_t takeBytesRead();

  // Bytes the peer sent that were not consumed yet: buffered here, or in the socket.
  std::uint64_t unreadBytes() const;
  // True when the peer reset the connection (TCP state CLOSE), even while bytes it sent
  // before the reset are still buffered here.
  bool peerReset() const;
  // True when the peer can no longer read what this side sends: it reset the connection or
  // closed its end (TCP state CLOSE or CLOSE_WAIT).
  bool peerGone() const;
  // Closes the socket plainly (FIN after what was sent). Idempotent.
  void closeSocket();
  // Closes with a reset: queued output is dropped and nothing more goes out. Idempotent; the
  // destructor closes gracefully unless this was called.
  void abort();

 private:
  struct OutFrame {
    EncodedHeader header;
    std::span<const std::uint8_t> first;
    std::span<const std::uint8_t> second;
    std::string owned;
    std::uint64_t tag = 0;
    std::uint64_t written = 0;    // bytes of the frame already sent
    bool plain = false;           // sent without tags (queuePlain)
    bool headerSealed = false;    // its header is encrypted and `headerTag` made
    std::uint64_t processed = 0;  // body bytes sealed so far (a frame body may only go out
                                  // sealed)
    bool tagReady = false;        // the whole body is sealed and `bodyTag` made
    bool bodyTagged = false;      // a body tag follows the body (FrameProtection::tagsBodies)
    crypto::GcmTag headerTag{};
    crypto::GcmTag bodyTag{};
    // Encrypted, a body in the caller's memory: the ciphertext of body bytes
    // [stagedFrom, processed).
    std::string staged;
    std::uint64_t stagedFrom = 0;
  };

  Status failure(const char* what, int error) const;
  static std::uint64_t bodyBytes(const OutFrame& frame);
  static std::uint64_t frameBytes(const OutFrame& frame);
  // Whether a frame's body lies in the caller's memory (first, second) rather than `owned`.
  static bool inCallerMemory(const OutFrame& frame) {
    return !frame.first.empty() || !frame.second.empty();
  }
  // Seals the frame's header (and finishes a frame without body).
  void sealHeader(OutFrame& frame);
  // Seals the next piece of the frame's body; with the last one, its tag.
  void sealPiece(OutFrame& frame);

  int fd_;
  std::string peer_;
  std::deque<OutFrame> output_;
  std::optional<FrameProtection> protection_;
  std::unique_ptr<std::uint8_t[]> input_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::uint64_t bytesRead_ = 0;
};

}  // namespace kvx::engine::socket
