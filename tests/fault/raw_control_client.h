#pragma once

// RawControlClient: a plain POSIX TCP client of an agent's control port, for tests that play
// a broken or hostile peer. It writes whatever bytes it is given and reads whatever comes
// back; what it reads is decoded as control-channel frames, best effort, so that the test can
// see the ErrorMessage an agent sent before it closed. Every call has a deadline.
//
// Uses no Catch2 macro: attackers run on threads of their own and report plain values.
// Not thread-safe: one client belongs to one thread.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/messages/message.h"
#include "kvx/transfer.h"

namespace kvx::test::fault {

class RawControlClient {
 public:
  // Connects to `address` ("127.0.0.1:port") from `sourceIp` (any loopback address, so that
  // a test can look like a host of its own to the per-address limit) by `deadline`. Nullopt
  // on failure, with the reason in `why`.
  static std::optional<RawControlClient> connect(const std::string& address,
                                                 const std::string& sourceIp, Deadline deadline,
                                                 std::string& why) {
    const std::size_t colon = address.rfind(':');
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1))));
    sockaddr_in from{};
    from.sin_family = AF_INET;
    if (::inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr) != 1 ||
        ::inet_pton(AF_INET, sourceIp.c_str(), &from.sin_addr) != 1) {
      why = "not IPv4 addresses: " + address + " from " + sourceIp;
      return std::nullopt;
    }
    RawControlClient client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (client.fd_ < 0) return fail(why, "socket");
    if (::bind(client.fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
      return fail(why, "bind to " + sourceIp);
    }
    if (::connect(client.fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      if (errno != EINPROGRESS) return fail(why, "connect to " + address);
      if (!client.waitFor(POLLOUT, deadline)) {
        why = "connect to " + address + " did not complete by the deadline";
        return std::nullopt;
      }
      int error = 0;
      socklen_t length = sizeof(error);
      ::getsockopt(client.fd_, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) {
        why = "connect to " + address + ": " + std::strerror(error);
        return std::nullopt;
      }
    }
    client.connectedAt_ = Clock::now();
    return client;
  }

  RawControlClient(RawControlClient&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)),
        connectedAt_(other.connectedAt_),
        closedAt_(other.closedAt_),
        reset_(other.reset_),
        decoder_(std::move(other.decoder_)),
        frames_(std::move(other.frames_)) {}
  RawControlClient& operator=(RawControlClient&&) = delete;
  ~RawControlClient() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Writes all of `bytes` by `deadline`; false once the agent closed or the deadline passed.
  bool send(std::span<const std::uint8_t> bytes, Deadline deadline) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes = bytes.subspan(static_cast<std::size_t>(n));
      } else if (n < 0 && errno == EAGAIN) {
        if (!waitFor(POLLOUT, deadline)) return false;
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return false;
      }
    }
    return true;
  }
  bool send(const std::string& text, Deadline deadline) {
    return send(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                deadline);
  }

  // Half-closes: the agent reads EOF, and can still answer.
  void shutdownWrite() { ::shutdown(fd_, SHUT_WR); }

  // Reads what has arrived until `until`, or until the agent closed (EOF or reset: true).
  bool readUntil(Deadline until) {
    while (!closed()) {
      if (!waitFor(POLLIN, until)) return false;
      readAvailable();
    }
    return true;
  }

  // readUntil for many clients at once: each one's close is noted when it happens.
  static void readAllUntil(std::span<RawControlClient> clients, Deadline until) {
    for (;;) {
      std::vector<pollfd> polls;
      std::vector<RawControlClient*> open;
      for (RawControlClient& client : clients) {
        if (client.closed()) continue;
        polls.push_back(pollfd{client.fd_, POLLIN, 0});
        open.push_back(&client);
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (open.empty() || left <= 0) return;
      const int n =
          ::poll(polls.data(), polls.size(), static_cast<int>(std::min<long long>(left, 100)));
      if (n < 0 && errno != EINTR) return;
      for (std::size_t i = 0; i < polls.size(); ++i) {
        if (polls[i].revents != 0) open[i]->readAvailable();
      }
    }
  }

  // Reads until a frame is available (returned and removed), the agent closed, or `until`.
  std::optional<agent::channel::Frame> readFrame(Deadline until) {
    for (;;) {
      if (!frames_.empty()) {
        agent::channel::Frame frame = std::move(frames_.front());
        frames_.erase(frames_.begin());
        return frame;
      }
      if (closed() || !waitFor(POLLIN, until)) return std::nullopt;
      readAvailable();
    }
  }

  bool closed() const { return closedAt_.has_value(); }
  // Connect to close, as this client saw it.
  std::chrono::milliseconds lifetime() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(closedAt_.value_or(Clock::now()) -
                                                                 connectedAt_);
  }
  bool reset() const { return reset_; }

  // The code of the first ErrorMessage the agent sent ("PROTOCOL_ERROR"), or "" if none
  // arrived (a reset can swallow it: the test decides whether that is acceptable).
  std::string errorCode() const {
    for (const agent::channel::Frame& frame : frames_) {
      auto message = agent::channel::decodeMessage(frame);
      if (!message.isOk()) continue;
      if (const auto* error = std::get_if<agent::channel::ErrorMessage>(&*message))
        return error->code;
    }
    return "";
  }

 private:
  explicit RawControlClient(int fd) : fd_(fd) {}

  static std::optional<RawControlClient> fail(std::string& why, const std::string& what) {
    why = what + ": " + std::strerror(errno);
    return std::nullopt;
  }

  // Waits until the socket is ready for `events`, or `deadline`; true when ready.
  bool waitFor(short events, Deadline deadline) {
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
  }

  // Takes every byte waiting; notes EOF or reset.
  void readAvailable() {
    std::uint8_t chunk[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (n > 0) {
        // A malformed answer is worth no exception here: the frames before it still count.
        (void)decoder_.feed(std::span(chunk, static_cast<std::size_t>(n)));
        while (auto frame = decoder_.next()) frames_.push_back(std::move(*frame));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      reset_ = n < 0;
      closedAt_ = Clock::now();
      return;
    }
  }

  int fd_ = -1;
  Clock::time_point connectedAt_{};
  std::optional<Clock::time_point> closedAt_;
  bool reset_ = false;
  agent::channel::FrameDecoder decoder_;
  std::vector<agent::channel::Frame> frames_;
};

}  // namespace kvx::test::fault
