#include "engine/transport/socket/frame_reader.h"

#include <algorithm>
#include <utility>

namespace kvx::engine::socket {
namespace {

constexpr std::uint64_t kCollectStepBytes = 256u << 10;

}  // namespace

Status FrameReader::integrityFailure(SocketStream& stream, const char* part) const {
  return unauthenticated("socket data connection with " + stream.peer() + ": the " + part +
                         " of frame " + std::to_string(protection_->sequence()) +
                         " failed its integrity check (changed on the way, replayed, or made "
                         "by a party without the connection's keys)");
}

Result<bool> FrameReader::pump(SocketStream& stream, FrameHandler& handler, std::uint64_t budget) {
  stream.takeBytesRead();
  std::uint64_t taken = 0;
  for (;;) {
    taken += stream.takeBytesRead();
    if (taken >= budget) return true;
    if (!inBody_) {
      const std::size_t headerBytes = kFrameHeaderBytes + (protection_ ? kTagBytes : 0);
      if (stream.buffered().size() < headerBytes) {
        KVX_ASSIGN_OR_RETURN(bool got, stream.fill());
        if (!got) return false;
        continue;
      }
      const std::span<const std::uint8_t> bytes = stream.buffered().first(headerBytes);
      EncodedHeader plain{};
      if (protection_) {
        crypto::GcmTag tag{};
        std::copy(bytes.begin() + kFrameHeaderBytes, bytes.end(), tag.begin());
        if (!protection_->openHeader(bytes.first(kFrameHeaderBytes), tag, plain)) {
          return integrityFailure(stream, "header");
        }
      } else {
        std::copy(bytes.begin(), bytes.begin() + kFrameHeaderBytes, plain.begin());
      }
      KVX_ASSIGN_OR_RETURN(header_, decodeFrameHeader(plain));
      stream.consume(headerBytes);
      KVX_ASSIGN_OR_RETURN(sink_, handler.onHeader(header_));
      remaining_ = followingBytes(header_);
      offset_ = 0;
      body_.clear();
      inBody_ = true;
      tagRemaining_ = protection_ && protection_->tagsBodies() && remaining_ > 0 ? kTagBytes : 0;
      checkBody_ = tagRemaining_ > 0 && (sink_.dest != nullptr || sink_.collect);
    }
    while (remaining_ > 0) {
      if (sink_.stopOnReset && stream.peerReset()) {
        return peerFailed("socket data path to " + stream.peer() + ": the peer reset it in the " +
                          "middle of a " + std::string(toString(header_.type)) +
                          "; the rest of it is dropped");
      }
      std::uint8_t* dest = sink_.dest != nullptr ? sink_.dest + offset_ : nullptr;
      std::uint64_t want = checkBody_ ? std::min(remaining_, kSealPieceBytes) : remaining_;
      if (sink_.dest == nullptr && sink_.collect) {
        // A collected body grows with the bytes that came, not with what the header claims.
        want = std::min(remaining_, kCollectStepBytes);
        body_.resize(offset_ + want);
        dest = body_.data() + offset_;
      }
      KVX_ASSIGN_OR_RETURN(std::uint64_t got, stream.readInto(dest, want));
      if (sink_.dest == nullptr && sink_.collect) body_.resize(offset_ + got);
      if (got == 0) return false;
      if (checkBody_) protection_->openBody(dest, got);
      offset_ += got;
      remaining_ -= got;
    }
    while (tagRemaining_ > 0) {
      KVX_ASSIGN_OR_RETURN(
          std::uint64_t got,
          stream.readInto(bodyTag_.data() + kTagBytes - tagRemaining_, tagRemaining_));
      if (got == 0) return false;
      tagRemaining_ -= got;
    }
    if (checkBody_ && !protection_->openBodyTag(bodyTag_)) return integrityFailure(stream, "body");
    if (protection_) protection_->finishFrame();
    inBody_ = false;
    KVX_RETURN_IF_ERROR(handler.onFrame(header_, std::move(body_)));
  }
}

}  // namespace kvx::engine::socket
