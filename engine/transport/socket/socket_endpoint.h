#pragma once

// SocketEndpoint: one TCP connection from this transport to a peer's, carrying puts, gets
// and messages as frames (socket_wire.h). The peer answers every request in order, so the
// operations in flight are a queue: each reply completes the oldest one, and a flush is a
// marker that completes when everything before it has.
//
// Connecting runs in the background: connect() returns at once, operations queue behind the
// hello, and the transport's progress() finishes the connect (each published address in
// turn) and reads the peer's welcome, or fails the endpoint when connectTimeout passes. The
// queued operations go out, protected with the connection's keys (frame_protection.h), once
// the welcome is in.
//
// Thread safety: every member may be called from any thread; each takes the transport's lock.

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "engine/transport/endpoint.h"
#include "engine/transport/socket/frame_reader.h"
#include "engine/transport/socket/socket_address.h"
#include "engine/transport/socket/socket_connection.h"
#include "engine/transport/socket/socket_stream.h"
#include "engine/transport/socket/socket_transport.h"
#include "engine/transport/transport.h"
#include "sync/mutex.h"

namespace kvx::engine::socket {

class SocketEndpoint final : public Endpoint, public SocketConnection, private FrameHandler {
 public:
  SocketEndpoint(SocketTransport& transport, SocketAddress peer, EndpointErrorHandler onError);
  ~SocketEndpoint() override;

  // REQUIRES: the transport's lock (the transport calls it holding its lock, which the
  // analysis cannot tell is transport_.mutex(): it assumes it). Starts connecting;
  // PEER_FAILED when no address of the peer can even be tried.
  Status startLocked(Clock::time_point now);

  Result<std::unique_ptr<RemoteKey>> unpackRemoteKey(std::span<const std::uint8_t> packed,
                                                     MemoryKind kind) override;
  void put(const RmaOp& op, Completion* completion) override;
  void get(const RmaOp& op, Completion* completion) override;
  void postBatch(std::span<const RmaOp> ops, bool write, Completion* completion) override;
  void flush(Completion* completion) override;
  void sendMessage(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload,
                   Completion* completion) override;
  void close(bool force) override;
  bool failed() const override;
  std::string description() const override;
  // A put's post writes what the socket takes at once, copying GPU memory out first. A get
  // copies nothing at post, but gets take the same turns as puts here.
  bool copiesWhenPosted() const override { return true; }

  bool onEventsLocked(std::uint32_t events) override KVX_REQUIRES(transport_.mutex());
  void onTickLocked(Clock::time_point now) override KVX_REQUIRES(transport_.mutex());
  bool needsAttentionLocked() const override KVX_REQUIRES(transport_.mutex()) {
    return moreInput_ || postFailure_.has_value();
  }

 private:
  enum class State { kConnecting, kOpen, kFailed, kClosed };
  struct Pending {
    FrameType type = FrameType::kPut;  // kHello marks a flush
    std::uint64_t sequence = 0;
    Completion* completion = nullptr;
    std::uint8_t* dest = nullptr;  // a get's local buffer
    std::uint64_t length = 0;
    int device = -1;  // the GPU whose memory `dest` is; -1: host memory
  };

  // The frame reader's callbacks, from onEventsLocked.
  Result<BodySink> onHeader(const FrameHeader& header) override KVX_REQUIRES(transport_.mutex());
  Status onFrame(const FrameHeader& header, std::vector<std::uint8_t> body) override
      KVX_REQUIRES(transport_.mutex());

  void postRmaLocked(const RmaOp& op, bool write, Completion* completion)
      KVX_REQUIRES(transport_.mutex());
  // The status a post gets when the endpoint cannot take it (closed or failed); OK otherwise.
  Status unusableLocked() const KVX_REQUIRES(transport_.mutex());
  Status checkRma(const RmaOp& op) const;
  // The GPU of the operation's local memory; -1 for host memory.
  static int localDevice(const RmaOp& op);
  bool tryNextAddressLocked() KVX_REQUIRES(transport_.mutex());
  // Writes what the socket takes. A failure found while posting (`fromPost`) is left to
  // progress(): a post completes no operation but its own.
  void kickLocked(bool fromPost) KVX_REQUIRES(transport_.mutex());
  void failLocked(const Status& status) KVX_REQUIRES(transport_.mutex());
  void closeLocked(bool reset) KVX_REQUIRES(transport_.mutex());
  void completeFlushesLocked() KVX_REQUIRES(transport_.mutex());
  void updateWatchLocked() KVX_REQUIRES(transport_.mutex());

  // Takes the connection's keys from the peer's welcome.
  Status welcomedLocked(std::span<const std::uint8_t> targetNonce) KVX_REQUIRES(transport_.mutex());

  SocketTransport& transport_;
  SocketAddress peer_;
  std::uint32_t protection_;  // what the hello asks for
  Result<Nonce> nonce_;       // this side's, sent in the hello
  // failed() and description() take no transport lock: callers ask while holding locks that
  // completions (which run under it) take too.
  std::atomic<bool> failed_{false};
  mutable sync::Mutex descriptionMutex_;  // a leaf lock
  std::string description_ KVX_GUARDED_BY(descriptionMutex_);
  EndpointErrorHandler onError_;
  // Under the transport's lock:
  SocketStream stream_ KVX_GUARDED_BY(transport_.mutex());
  FrameReader reader_ KVX_GUARDED_BY(transport_.mutex());
  State state_ KVX_GUARDED_BY(transport_.mutex()) = State::kConnecting;
  bool welcomed_ KVX_GUARDED_BY(transport_.mutex()) = false;
  std::uint64_t id_ KVX_GUARDED_BY(transport_.mutex()) = 0;
  std::size_t nextAddress_ KVX_GUARDED_BY(transport_.mutex()) = 0;
  std::string connectErrors_ KVX_GUARDED_BY(transport_.mutex());
  Clock::time_point connectDeadline_ KVX_GUARDED_BY(transport_.mutex()) = {};
  bool watchingWrite_ KVX_GUARDED_BY(transport_.mutex()) = true;
  bool moreInput_ KVX_GUARDED_BY(transport_.mutex()) =
      false;  // the last pump stopped for its budget
  // A write failure found while posting.
  std::optional<Status> postFailure_ KVX_GUARDED_BY(transport_.mutex());
  Status failure_ KVX_GUARDED_BY(transport_.mutex());
  std::uint64_t sequence_ KVX_GUARDED_BY(transport_.mutex()) = 0;
  std::deque<Pending> pending_ KVX_GUARDED_BY(transport_.mutex());
};

}  // namespace kvx::engine::socket
