#pragma once

// ControlConnection: one connection of the control channel, reading and writing frames with
// deadlines over a ByteStream (plain TCP or TLS: stream/byte_stream.h). It knows frames, not
// messages: the channel decides what a frame means.
//
// Threading: created, used and destroyed on the channel's io thread only (the thread that
// runs the io_context of its socket). Not thread-safe. Kept alive by shared_ptr: every
// pending Asio operation holds one.
//
// Guarantees:
//  - onFrame is called for each complete frame, in order, until the connection starts
//    closing or a read fails.
//  - onReadFailed is called at most once, when the byte stream is malformed (PROTOCOL_ERROR)
//    or a read deadline passes (TIMED_OUT). The socket is still open then, so the owner can
//    send an ErrorMessage before closeAfterFlush(); no frame is delivered after it.
//  - onClosed is called exactly once, after the socket is closed, from a posted handler
//    (never from inside a call to this class), with the reason given to close() or
//    closeAfterFlush(), or the read/write error that closed it.
//  - No operation waits without a bound: a started frame must complete within
//    `frameTimeout`, a write within `writeTimeout`, the handshake by setReadDeadline().
//  - A stream that is not ready at start (TLS) is opened first; frames sent meanwhile are
//    queued. The read deadline bounds the opening too: when it passes first, or the opening
//    fails, the connection closes (onClosed with TIMED_OUT or the stream's error) without
//    onReadFailed, since nothing can be written to the peer. The exception is a stream that
//    stays writable after a failed opening (a plain peer of a TLS listener): then
//    onReadFailed reports the failure, so that the owner can answer before closing.
//  - With startLiveness(), an established link sends its heartbeat frame periodically and
//    is closed (onClosed with PEER_FAILED) when nothing has been received for the timeout.

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/frame_seal.h"
#include "agent/channel/stream/byte_stream.h"
#include "kvx/status.h"
#include "kvx/transfer.h"

namespace kvx::agent::channel {

class ControlConnection : public std::enable_shared_from_this<ControlConnection> {
 public:
  struct Callbacks {
    std::function<void(Frame)> onFrame;
    std::function<void(const Status&)> onReadFailed;
    std::function<void(const Status&)> onClosed;
  };

  // REQUIRES: `stream` is connected.
  ControlConnection(std::unique_ptr<ByteStream> stream, std::uint32_t maxFrameBytes,
                    std::chrono::milliseconds frameTimeout, std::chrono::milliseconds writeTimeout);

  ControlConnection(const ControlConnection&) = delete;
  ControlConnection& operator=(const ControlConnection&) = delete;

  // Opens the stream if it is not ready, then starts reading. Call once.
  void start(Callbacks callbacks);

  // Queues `bytes` (one encoded frame) for writing; dropped once closing has begun.
  void send(std::vector<std::uint8_t> bytes);

  // Until cleared, a complete frame must arrive by `deadline` or onReadFailed(TIMED_OUT)
  // fires. The owner sets it for the handshake and clears it (nullopt) once done.
  void setReadDeadline(std::optional<Deadline> deadline);

  // The largest frame payload accepted from now on (frames whose header has not completed
  // yet): the channel keeps it small until a peer has authenticated.
  void setMaxFrameBytes(std::uint32_t maxFrameBytes);

  // From now on every frame sent is encrypted and tagged with `sendKey`, and every frame
  // received must be sealed with `receiveKey` (frame_seal.h); a frame without a matching
  // tag fails the read with UNAUTHENTICATED and is not delivered. Call once, when
  // the peers have authenticated each other.
  void sealFrames(const AuthBytes& sendKey, const AuthBytes& receiveKey);

  // What startLiveness() is given. A zero period turns that half off.
  struct Liveness {
    std::chrono::milliseconds sendEvery{0};  // how often to queue `heartbeat`
    std::vector<std::uint8_t> heartbeat;     // one encoded frame
    std::chrono::milliseconds timeout{0};    // silence after which the link is dead
    std::string peerName;                    // for the error message
  };

  // From now on: every `sendEvery`, queues `heartbeat` unless a write is still pending (a
  // peer that is not reading needs no more bytes; the write deadline covers it); and when
  // no byte at all has arrived for `timeout`, closes the connection with PEER_FAILED "no
  // sign of life from '<peer>' for 2.0 s (peer timeout)". Silence is measured from this
  // call or the last byte received, whichever is later. Bytes waiting unread in the socket
  // count as received, so that this side's own stall (a stopped process, a busy thread) is
  // not blamed on the peer. Call at most once, while open.
  void startLiveness(Liveness liveness);

  // Writes what is queued, half-closes, then waits up to `linger` for the peer to close
  // (so that it can read the last frame) before closing. Frames read meanwhile are dropped.
  // While the stream is still opening, `linger` also bounds the opening: what is queued is
  // written only if it completes in time.
  void closeAfterFlush(Status why, std::chrono::milliseconds linger);

  // Closes now; queued writes are dropped.
  void close(Status why);

  bool isOpen() const { return state_ == State::kOpen; }
  // When the last byte arrived (or liveness started, if later); on the strand, like the rest.
  Deadline lastReceived() const { return lastReceived_; }
  const std::string& remoteAddress() const { return remoteAddress_; }

 private:
  enum class State { kOpen, kDraining, kClosed };

  void onOpened(const Status& result);
  void armLinger();
  void readSome();
  void onRead(const boost::system::error_code& error, std::size_t bytes);
  void armReadTimer();
  void onReadTimer();
  void writeNext();
  void afterFlush();
  void finishClose();
  void failRead(Status why);
  void armLivenessTimer();
  void onLivenessTimer();

  std::unique_ptr<ByteStream> stream_;
  boost::asio::steady_timer readTimer_;  // read deadline, then the linger bound
  boost::asio::steady_timer writeTimer_;
  boost::asio::steady_timer livenessTimer_;  // heartbeats due, silence deadline
  const std::chrono::milliseconds frameTimeout_;
  const std::chrono::milliseconds writeTimeout_;
  std::string remoteAddress_;
  Callbacks callbacks_;

  State state_ = State::kOpen;
  bool streamReady_ = false;  // reads and writes may start (the stream is open)
  Status closeReason_;
  FrameDecoder decoder_;
  std::vector<std::uint8_t> readBuffer_;
  bool reading_ = false;
  bool readFailed_ = false;
  bool peerClosed_ = false;
  std::optional<Deadline> readDeadline_;
  std::optional<Deadline> frameStarted_;
  std::deque<std::vector<std::uint8_t>> writeQueue_;
  bool writing_ = false;
  std::uint64_t writeSeq_ = 0;
  std::chrono::milliseconds linger_{0};

  Liveness liveness_;
  bool livenessOn_ = false;
  std::optional<FrameSeal> sendSeal_;     // set by sealFrames()
  std::optional<FrameSeal> receiveSeal_;  // set by sealFrames()
  Deadline lastReceived_{};               // the last read that brought bytes
  Deadline nextHeartbeat_{};
};

}  // namespace kvx::agent::channel
