#include "bench/bare/pipe_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace kvx::bench {
namespace {

constexpr std::size_t kHeaderBytes = 8;

void setNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

Status ioError(const char* what, int fd) {
  return internalError(std::string(what) + " on pipe fd " + std::to_string(fd) + ": " +
                       std::strerror(errno));
}

}  // namespace

PipeChannel::PipeChannel(int readFd, int writeFd) : readFd_(readFd), writeFd_(writeFd) {
  setNonBlocking(readFd_);
  setNonBlocking(writeFd_);
}

Status PipeChannel::send(std::uint32_t type, std::span<const std::uint8_t> payload,
                         Deadline deadline) {
  if (payload.size() > kMaxPayload) {
    return invalidArgument("pipe message of " + std::to_string(payload.size()) +
                           " bytes exceeds the limit of " + std::to_string(kMaxPayload));
  }
  std::vector<std::uint8_t> frame(kHeaderBytes + payload.size());
  const auto length = static_cast<std::uint32_t>(payload.size());
  std::memcpy(frame.data(), &type, 4);
  std::memcpy(frame.data() + 4, &length, 4);
  if (!payload.empty()) std::memcpy(frame.data() + kHeaderBytes, payload.data(), payload.size());

  std::size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t n = ::write(writeFd_, frame.data() + sent, frame.size() - sent);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EPIPE) {
      return peerFailed("the other process closed the pipe (message type " + std::to_string(type) +
                        " not delivered)");
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return ioError("write", writeFd_);
    if (std::chrono::steady_clock::now() >= deadline) {
      return timedOut("pipe message type " + std::to_string(type) + ": only " +
                      std::to_string(sent) + " of " + std::to_string(frame.size()) +
                      " bytes written by the deadline (is the other process reading?)");
    }
    pollfd p{writeFd_, POLLOUT, 0};
    ::poll(&p, 1, pollTimeoutMs(deadline));
  }
  return Status::ok();
}

std::optional<PipeMessage> PipeChannel::takeBuffered() {
  if (buffer_.size() < kHeaderBytes) return std::nullopt;
  PipeMessage message;
  std::uint32_t length = 0;
  std::memcpy(&message.type, buffer_.data(), 4);
  std::memcpy(&length, buffer_.data() + 4, 4);
  if (buffer_.size() < kHeaderBytes + length) return std::nullopt;
  const auto begin = buffer_.begin() + kHeaderBytes;
  message.payload.assign(begin, begin + length);
  buffer_.erase(buffer_.begin(), begin + length);
  return message;
}

Result<bool> PipeChannel::fill() {
  while (true) {
    std::uint8_t chunk[65536];
    const ssize_t n = ::read(readFd_, chunk, sizeof(chunk));
    if (n > 0) {
      buffer_.insert(buffer_.end(), chunk, chunk + n);
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return true;
    return ioError("read", readFd_);
  }
}

Result<std::optional<PipeMessage>> PipeChannel::tryReceive() {
  if (auto message = takeBuffered()) return message;
  KVX_ASSIGN_OR_RETURN(const bool open, fill());
  if (auto message = takeBuffered()) return message;
  if (!open) {
    return peerFailed("the other process closed the pipe (" + std::to_string(buffer_.size()) +
                      " bytes of an unfinished message left)");
  }
  if (buffer_.size() >= kHeaderBytes) {
    std::uint32_t length = 0;
    std::memcpy(&length, buffer_.data() + 4, 4);
    if (length > kMaxPayload) {
      return protocolError("pipe message announces " + std::to_string(length) +
                           " bytes, above the limit of " + std::to_string(kMaxPayload));
    }
  }
  return std::optional<PipeMessage>();
}

Result<PipeMessage> PipeChannel::receive(Deadline deadline) {
  while (true) {
    KVX_ASSIGN_OR_RETURN(std::optional<PipeMessage> message, tryReceive());
    if (message) return std::move(*message);
    if (std::chrono::steady_clock::now() >= deadline) {
      return timedOut("no message from the other process by the deadline (" +
                      std::to_string(buffer_.size()) + " bytes of a message buffered)");
    }
    pollfd p{readFd_, POLLIN, 0};
    ::poll(&p, 1, pollTimeoutMs(deadline));
  }
}

}  // namespace kvx::bench
