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

namespace kvx::engine::socket {

class SocketTransport;

inline constexpr std::size_t kMaxQueuedAnswers = 1024;

class InboundConnection final : public SocketConnection, private FrameHandler {
 public:
  InboundConnection(SocketTransport& transport, int fd, std::string peer, Clock::time_point now);

  void setId(std::uint64_t id) { id_ = id; }
  bool onEventsLocked(std::uint32_t events) override;
  void onTickLocked(Clock::time_point now) override;
  bool needsAttentionLocked() const override { return moreInput_ && !throttled(); }
  // True while bytes of `region` are being placed or sent on this connection.
  bool touchesRegionLocked(std::uint64_t region) const;
  // The instance of the transport whose endpoint opened this connection (from its hello);
  // 0 before the hello.
  std::uint64_t initiatorLocked() const { return greeted_ ? initiator_ : 0; }
  // Bytes the initiator sent that this side has not read yet.
  std::uint64_t unreadLocked() const { return stream_.unreadBytes(); }
  // Ends the connection now (reset); the transport destroys it from its next progress().
  void endLocked(const Status& why);

 private:
  Result<BodySink> onHeader(const FrameHeader& header) override;
  Status onFrame(const FrameHeader& header, std::vector<std::uint8_t> body) override;
  void reply(const FrameHeader& request, const Status& status);
  // Writes queued answers, unless the initiator is gone (PEER_FAILED: they are dropped).
  Status writeAnswers();
  void updateWatch();
  // True while so many answers wait to be written that reading more requests would only
  // queue more (a peer that sends but never reads).
  bool throttled() const { return stream_.queuedFrames() >= kMaxQueuedAnswers; }

  SocketTransport& transport_;
  SocketStream stream_;
  FrameReader reader_;
  std::uint64_t id_ = 0;
  bool greeted_ = false;
  std::uint64_t initiator_ = 0;  // the hello's key
  bool ended_ = false;
  bool watchingWrite_ = false;
  bool watchingRead_ = true;
  bool moreInput_ = false;  // the last pump stopped for its budget
  Clock::time_point helloDeadline_;
  std::uint64_t placingRegion_ = 0;  // the region the put being read lands in
  Status refusal_;                   // why the current request was refused, if it was
  RegionAccess access_;              // where the current put or get lands or reads
};

}  // namespace kvx::engine::socket
