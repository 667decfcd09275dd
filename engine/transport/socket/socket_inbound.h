#pragma once

// InboundConnection: a peer endpoint's connection, served here. It expects a hello naming
// this transport's instance first, then answers each request in order: a put lands straight
// in the registered region it names, a get is answered from it, a message goes to the
// transport's handler. A region of GPU memory is never touched by the CPU: a put into it is
// collected in host memory and copied in whole before the reply, a get is copied out into
// host memory first (SocketDeviceCopies). A request the region table refuses (unknown region, wrong
// secret, out of bounds) gets an error reply and touches nothing; bytes that break the protocol end
// the connection.
//
// Owned by its SocketTransport; every member runs under the transport's lock.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/transport/socket/frame_reader.h"
#include "engine/transport/socket/region_access.h"
#include "engine/transport/socket/socket_connection.h"
#include "engine/transport/socket/socket_stream.h"
#include "engine/transport/socket/socket_transport.h"

namespace kvx::engine::socket {

inline constexpr std::size_t kMaxQueuedAnswers = 1024;

class InboundConnection final : public SocketConnection, private FrameHandler {
 public:
  InboundConnection(SocketTransport& transport, int fd, std::string peer, Clock::time_point now);

  // The transport calls the members below holding its lock, which the analysis cannot tell
  // is transport_.mutex(): those it calls directly say so (assumeHeld) instead of requiring it.
  void setId(std::uint64_t id) {
    transport_.mutex().assumeHeld();
    id_ = id;
  }
  bool onEventsLocked(std::uint32_t events) override KVX_REQUIRES(transport_.mutex());
  void onTickLocked(Clock::time_point now) override KVX_REQUIRES(transport_.mutex());
  bool needsAttentionLocked() const override KVX_REQUIRES(transport_.mutex()) {
    return moreInput_ && !throttled();
  }
  // True while bytes of `region` are being placed or sent on this connection.
  bool touchesRegionLocked(std::uint64_t region) const;
  // The instance of the transport whose endpoint opened this connection (from its hello);
  // 0 before the hello.
  std::uint64_t initiatorLocked() const {
    transport_.mutex().assumeHeld();
    return greeted_ ? initiator_ : 0;
  }
  // Bytes the initiator sent that this side has not read yet.
  std::uint64_t unreadLocked() const {
    transport_.mutex().assumeHeld();
    return stream_.unreadBytes();
  }
  // Ends the connection now (reset); the transport destroys it from its next progress().
  void endLocked(const Status& why);

 private:
  // The frame reader's callbacks, from onEventsLocked.
  Result<BodySink> onHeader(const FrameHeader& header) override KVX_REQUIRES(transport_.mutex());
  Status onFrame(const FrameHeader& header, std::vector<std::uint8_t> body) override
      KVX_REQUIRES(transport_.mutex());
  void reply(const FrameHeader& request, const Status& status) KVX_REQUIRES(transport_.mutex());
  // Answers a hello with a welcome and takes the connection's keys (frame_protection.h).
  Status welcome(const FrameHeader& hello, std::span<const std::uint8_t> nonce)
      KVX_REQUIRES(transport_.mutex());
  // Writes queued answers, unless the initiator is gone (PEER_FAILED: they are dropped).
  Status writeAnswers() KVX_REQUIRES(transport_.mutex());
  void updateWatch() KVX_REQUIRES(transport_.mutex());
  // True while so many answers wait to be written that reading more requests would only
  // queue more (a peer that sends but never reads).
  bool throttled() const KVX_REQUIRES(transport_.mutex()) {
    return stream_.queuedFrames() >= kMaxQueuedAnswers;
  }

  SocketTransport& transport_;
  SocketStream stream_ KVX_GUARDED_BY(transport_.mutex());
  FrameReader reader_ KVX_GUARDED_BY(transport_.mutex());
  std::uint64_t id_ KVX_GUARDED_BY(transport_.mutex()) = 0;
  bool greeted_ KVX_GUARDED_BY(transport_.mutex()) = false;
  std::uint64_t initiator_ KVX_GUARDED_BY(transport_.mutex()) = 0;  // the hello's key
  bool ended_ KVX_GUARDED_BY(transport_.mutex()) = false;
  bool watchingWrite_ KVX_GUARDED_BY(transport_.mutex()) = false;
  bool watchingRead_ KVX_GUARDED_BY(transport_.mutex()) = true;
  bool moreInput_ KVX_GUARDED_BY(transport_.mutex()) =
      false;  // the last pump stopped for its budget
  Clock::time_point helloDeadline_ KVX_GUARDED_BY(transport_.mutex());
  // The region the put being read lands in.
  std::uint64_t placingRegion_ KVX_GUARDED_BY(transport_.mutex()) = 0;
  Status refusal_
      KVX_GUARDED_BY(transport_.mutex());  // why the current request was refused, if it was
  RegionAccess access_
      KVX_GUARDED_BY(transport_.mutex());  // where the current put or get lands or reads
};

}  // namespace kvx::engine::socket
