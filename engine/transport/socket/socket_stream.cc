#include "engine/transport/socket/socket_stream.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace kvx::engine::socket {
namespace {

constexpr std::size_t kInputBytes = 64u << 10;
// Bodies at least this long skip the input buffer when it is empty.
constexpr std::uint64_t kDirectReadBytes = 16u << 10;
constexpr std::uint64_t kMaxReadBytes = 8u << 20;
constexpr int kMaxIovecs = 64;
constexpr int kMaxIovecsPerFrame = 6;  // header, its tag, 3 body parts, the body's tag

bool wouldBlock(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

}  // namespace

SocketStream::SocketStream(int fd, std::string peer)
    : fd_(fd), peer_(std::move(peer)), input_(new std::uint8_t[kInputBytes]) {}

SocketStream::~SocketStream() {
  if (fd_ >= 0) ::close(fd_);
}

void SocketStream::configureSocket(int fd) {
  const int one = 1;
  const int keepIdleSeconds = 10;
  const int keepIntervalSeconds = 5;
  const int keepProbes = 3;
  const unsigned userTimeoutMs = 30000;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &keepIdleSeconds, sizeof(keepIdleSeconds));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &keepIntervalSeconds, sizeof(keepIntervalSeconds));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &keepProbes, sizeof(keepProbes));
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeoutMs, sizeof(userTimeoutMs));
}

void SocketStream::adoptSocket(int fd, std::string peer) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  peer_ = std::move(peer);
}

void SocketStream::queue(const FrameHeader& header, std::span<const std::uint8_t> first,
                         std::span<const std::uint8_t> second, std::uint64_t tag) {
  OutFrame frame;
  frame.header = encodeFrameHeader(header);
  frame.first = first;
  frame.second = second;
  frame.tag = tag;
  output_.push_back(std::move(frame));
}

void SocketStream::queueOwned(const FrameHeader& header, std::string body) {
  OutFrame frame;
  frame.header = encodeFrameHeader(header);
  frame.owned = std::move(body);
  output_.push_back(std::move(frame));
}

void SocketStream::queuePlain(const FrameHeader& header, std::string body) {
  OutFrame frame;
  frame.header = encodeFrameHeader(header);
  frame.owned = std::move(body);
  frame.plain = true;
  output_.push_back(std::move(frame));
}

bool SocketStream::hasQueuedTag(std::uint64_t tag) const {
  return std::any_of(output_.begin(), output_.end(),
                     [tag](const OutFrame& frame) { return frame.tag == tag; });
}

std::uint64_t SocketStream::bodyBytes(const OutFrame& frame) {
  return frame.first.size() + frame.second.size() + frame.owned.size();
}

std::uint64_t SocketStream::frameBytes(const OutFrame& frame) {
  const std::uint64_t body = bodyBytes(frame);
  if (frame.plain) return kFrameHeaderBytes + body;
  return kFrameHeaderBytes + kTagBytes + body + (frame.bodyTagged ? kTagBytes : 0);
}

void SocketStream::sealHeader(OutFrame& frame) {
  frame.headerTag = protection_->sealHeader(frame.header);
  frame.headerSealed = true;
  frame.bodyTagged = protection_->tagsBodies() && bodyBytes(frame) > 0;
  if (!frame.bodyTagged) {  // the body, if any, goes out as it is
    frame.processed = bodyBytes(frame);
    frame.tagReady = true;
    protection_->finishFrame();
  }
}

void SocketStream::sealPiece(OutFrame& frame) {
  const std::uint64_t body = bodyBytes(frame);
  const std::uint64_t from = frame.processed;
  const std::uint64_t size = std::min(kSealPieceBytes, body - from);
  if (from == 0) protection_->beginBody();
  if (protection_->encrypts() && !inCallerMemory(frame)) {
    auto* owned = reinterpret_cast<std::uint8_t*>(frame.owned.data()) + from;
    protection_->sealBody({owned, size}, owned);  // a buffer of the stream's own: in place
  } else {
    if (protection_->encrypts()) {
      frame.staged.resize(size);
      frame.stagedFrom = from;
    }
    auto* out = reinterpret_cast<std::uint8_t*>(frame.staged.data());
    // The piece's bytes across the body's parts, in order.
    std::uint64_t at = 0;  // body offset of the part
    for (const std::span<const std::uint8_t> part : {frame.first, frame.second}) {
      const std::uint64_t begin = std::max(from, at);
      const std::uint64_t end = std::min(from + size, at + part.size());
      if (begin < end) {
        protection_->sealBody(part.subspan(begin - at, end - begin),
                              protection_->encrypts() ? out + (begin - from) : nullptr);
      }
      at += part.size();
    }
  }
  frame.processed += size;
  if (frame.processed == body) {
    frame.bodyTag = protection_->sealBodyTag();
    frame.tagReady = true;
    protection_->finishFrame();
  }
}

Status SocketStream::failure(const char* what, int error) const {
  if (error == 0) return peerFailed("socket data path to " + peer_ + ": the peer closed it");
  return peerFailed("socket data path to " + peer_ + ": " + what + ": " + std::strerror(error));
}

Status SocketStream::writeSome() {
  while (!output_.empty()) {
    iovec vectors[kMaxIovecs];
    int count = 0;
    for (OutFrame& frame : output_) {
      if (count + kMaxIovecsPerFrame > kMaxIovecs) break;
      if (!frame.plain && !frame.headerSealed) {
        if (!protection_) break;  // held until the connection has its keys
        sealHeader(frame);
      }
      std::uint64_t skip = frame.written;
      auto add = [&](const std::uint8_t* data, std::uint64_t size) {
        if (skip >= size) {
          skip -= size;
          return;
        }
        vectors[count].iov_base = const_cast<std::uint8_t*>(data + skip);
        vectors[count].iov_len = size - skip;
        skip = 0;
        ++count;
      };
      const std::uint64_t body = bodyBytes(frame);
      add(frame.header.data(), frame.header.size());
      if (frame.plain) {
        add(frame.first.data(), frame.first.size());
        add(frame.second.data(), frame.second.size());
        add(reinterpret_cast<const std::uint8_t*>(frame.owned.data()), frame.owned.size());
        continue;
      }
      add(frame.headerTag.data(), frame.headerTag.size());
      if (body == 0) continue;
      const std::uint64_t bodySent =
          std::min(body, frame.written -
                             std::min<std::uint64_t>(frame.written, kFrameHeaderBytes + kTagBytes));
      if (bodySent == frame.processed && !frame.tagReady) sealPiece(frame);
      if (protection_->encrypts() && inCallerMemory(frame)) {
        skip -= std::min(skip, frame.stagedFrom);  // the pieces before this one went out
        add(reinterpret_cast<const std::uint8_t*>(frame.staged.data()), frame.staged.size());
      } else {
        std::uint64_t sealedLeft = frame.processed;  // only sealed bytes go out
        for (const std::span<const std::uint8_t> part :
             {frame.first, frame.second,
              std::span<const std::uint8_t>(
                  reinterpret_cast<const std::uint8_t*>(frame.owned.data()), frame.owned.size())}) {
          const std::uint64_t take = std::min<std::uint64_t>(part.size(), sealedLeft);
          add(part.data(), take);
          sealedLeft -= take;
        }
      }
      if (!frame.tagReady) break;  // the next frames follow this body's tag
      if (frame.bodyTagged) add(frame.bodyTag.data(), frame.bodyTag.size());
    }
    if (count == 0) return Status::ok();  // what is queued waits for the connection's keys
    msghdr message{};
    message.msg_iov = vectors;
    message.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t sent = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (wouldBlock(errno)) return Status::ok();
      return failure("send", errno);
    }
    std::uint64_t left = static_cast<std::uint64_t>(sent);
    while (left > 0 && !output_.empty()) {
      OutFrame& frame = output_.front();
      const std::uint64_t step = std::min(left, frameBytes(frame) - frame.written);
      frame.written += step;
      left -= step;
      if (frame.written == frameBytes(frame)) output_.pop_front();
    }
  }
  return Status::ok();
}

Result<bool> SocketStream::fill() {
  if (begin_ == end_) begin_ = end_ = 0;
  if (begin_ > 0 && end_ == kInputBytes) {
    std::memmove(input_.get(), input_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == kInputBytes) return true;  // full: the caller has bytes to parse
  for (;;) {
    const ssize_t got = ::read(fd_, input_.get() + end_, kInputBytes - end_);
    if (got > 0) {
      end_ += static_cast<std::size_t>(got);
      bytesRead_ += static_cast<std::uint64_t>(got);
      return true;
    }
    if (got == 0) return failure("read", 0);
    if (errno == EINTR) continue;
    if (wouldBlock(errno)) return false;
    return failure("read", errno);
  }
}

Result<std::uint64_t> SocketStream::readInto(std::uint8_t* dest, std::uint64_t want) {
  if (begin_ == end_ && want >= kDirectReadBytes && dest != nullptr) {
    for (;;) {
      const ssize_t got = ::read(fd_, dest, std::min(want, kMaxReadBytes));
      if (got > 0) {
        bytesRead_ += static_cast<std::uint64_t>(got);
        return static_cast<std::uint64_t>(got);
      }
      if (got == 0) return failure("read", 0);
      if (errno == EINTR) continue;
      if (wouldBlock(errno)) return std::uint64_t{0};
      return failure("read", errno);
    }
  }
  if (begin_ == end_) {
    KVX_ASSIGN_OR_RETURN(bool got, fill());
    if (!got) return std::uint64_t{0};
  }
  const std::uint64_t step = std::min<std::uint64_t>(want, end_ - begin_);
  if (dest != nullptr) std::memcpy(dest, input_.get() + begin_, step);
  begin_ += step;
  return step;
}

std::uint64_t SocketStream::takeBytesRead() {
  const std::uint64_t bytes = bytesRead_;
  bytesRead_ = 0;
  return bytes;
}

std::uint64_t SocketStream::unreadBytes() const {
  int inSocket = 0;
  if (fd_ < 0 || ::ioctl(fd_, SIOCINQ, &inSocket) != 0) inSocket = 0;
  return buffered().size() + static_cast<std::uint64_t>(std::max(inSocket, 0));
}

bool SocketStream::peerReset() const {
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return true;
  return info.tcpi_state == TCP_CLOSE;
}

bool SocketStream::peerGone() const {
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return true;
  return info.tcpi_state == TCP_CLOSE || info.tcpi_state == TCP_CLOSE_WAIT;
}

void SocketStream::closeSocket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void SocketStream::abort() {
  output_.clear();
  if (fd_ < 0) return;
  linger reset{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  ::close(fd_);
  fd_ = -1;
}

}  // namespace kvx::engine::socket
