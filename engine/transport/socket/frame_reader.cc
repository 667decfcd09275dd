#include "engine/transport/socket/frame_reader.h"

#include <algorithm>
#include <utility>

namespace kvx::engine::socket {
namespace {

constexpr std::uint64_t kCollectStepBytes = 256u << 10;

}  // namespace

Result<bool> FrameReader::pump(SocketStream& stream, FrameHandler& handler, std::uint64_t budget) {
  stream.takeBytesRead();
  std::uint64_t taken = 0;
  for (;;) {
    taken += stream.takeBytesRead();
    if (taken >= budget) return true;
    if (!inBody_) {
      if (stream.buffered().size() < kFrameHeaderBytes) {
        KVX_ASSIGN_OR_RETURN(bool got, stream.fill());
        if (!got) return false;
        continue;
      }
      KVX_ASSIGN_OR_RETURN(header_, decodeFrameHeader(stream.buffered().first(kFrameHeaderBytes)));
      stream.consume(kFrameHeaderBytes);
      KVX_ASSIGN_OR_RETURN(sink_, handler.onHeader(header_));
      remaining_ = followingBytes(header_);
      offset_ = 0;
      body_.clear();
      inBody_ = true;
    }
    while (remaining_ > 0) {
      if (sink_.stopOnReset && stream.peerReset()) {
        return peerFailed("socket data path to " + stream.peer() + ": the peer reset it in the " +
                          "middle of a " + std::string(toString(header_.type)) +
                          "; the rest of it is dropped");
      }
      std::uint8_t* dest = sink_.dest != nullptr ? sink_.dest + offset_ : nullptr;
      std::uint64_t want = remaining_;
      if (sink_.dest == nullptr && sink_.collect) {
        // A collected body grows with the bytes that came, not with what the header claims.
        want = std::min(remaining_, kCollectStepBytes);
        body_.resize(offset_ + want);
        dest = body_.data() + offset_;
      }
      KVX_ASSIGN_OR_RETURN(std::uint64_t got, stream.readInto(dest, want));
      if (sink_.dest == nullptr && sink_.collect) body_.resize(offset_ + got);
      if (got == 0) return false;
      offset_ += got;
      remaining_ -= got;
    }
    inBody_ = false;
    KVX_RETURN_IF_ERROR(handler.onFrame(header_, std::move(body_)));
  }
}

}  // namespace kvx::engine::socket
