#pragma once

// TcpRelay: a party on the path of a socket data connection, for the tests of what such a
// party can do (socket_on_path_test.cc). It listens on loopback, forwards every connection
// it accepts to the target, both ways, in a thread of its own, records what the initiator
// sent, and can change one byte of it on the way (the n-th byte of the first connection,
// XORed with a mask).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace kvx::test {

class TcpRelay {
 public:
  struct Change {
    std::uint64_t offset = 0;  // in the initiator's bytes of the first connection
    std::uint8_t mask = 0;
  };

  TcpRelay(std::uint16_t targetPort, std::optional<Change> change = std::nullopt)
      : targetPort_(targetPort), change_(change) {
    listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listenFd_ >= 0);
    sockaddr_in local = loopback(0);
    REQUIRE(::bind(listenFd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0);
    REQUIRE(::listen(listenFd_, 8) == 0);
    socklen_t length = sizeof(local);
    REQUIRE(::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&local), &length) == 0);
    port_ = ntohs(local.sin_port);
    thread_ = std::thread([this] { run(); });
  }

  ~TcpRelay() {
    stop_.store(true);
    thread_.join();
    ::close(listenFd_);
  }

  std::uint16_t port() const { return port_; }

  // What the initiator of the first connection sent so far.
  std::vector<std::uint8_t> recorded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return recorded_;
  }

  static sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
  }

  // A blocking connection to the loopback port (from the test's thread).
  static int dial(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in target = loopback(port);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) == 0);
    return fd;
  }

 private:
  struct Pair {
    int initiator = -1;
    int target = -1;
    bool first = false;
    std::uint64_t forwarded = 0;  // initiator bytes so far
  };

  void run() {
    std::vector<Pair> pairs;
    bool accepted = false;
    while (!stop_.load()) {
      std::vector<pollfd> watched{{listenFd_, POLLIN, 0}};
      for (const Pair& pair : pairs) {
        watched.push_back({pair.initiator, POLLIN, 0});
        watched.push_back({pair.target, POLLIN, 0});
      }
      if (::poll(watched.data(), watched.size(), 20) <= 0) continue;
      const std::size_t polled = pairs.size();  // a pair accepted now is polled next round
      if ((watched[0].revents & POLLIN) != 0) {
        const int initiator = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (initiator >= 0) {
          const int target = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in address = loopback(targetPort_);
          if (target < 0 ||
              ::connect(target, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
            ::close(initiator);
            if (target >= 0) ::close(target);
            continue;
          }
          pairs.push_back({initiator, target, !accepted, 0});
          accepted = true;
        }
      }
      for (std::size_t i = 0; i < polled; ++i) {
        Pair& pair = pairs[i];
        if (pair.initiator < 0) continue;
        const bool fromInitiator = (watched[1 + 2 * i].revents & (POLLIN | POLLHUP)) != 0;
        const bool fromTarget = (watched[2 + 2 * i].revents & (POLLIN | POLLHUP)) != 0;
        if ((fromInitiator && !forward(pair, true)) || (fromTarget && !forward(pair, false))) {
          ::close(pair.initiator);
          ::close(pair.target);
          pair.initiator = pair.target = -1;
        }
      }
    }
    for (const Pair& pair : pairs) {
      if (pair.initiator >= 0) {
        ::close(pair.initiator);
        ::close(pair.target);
      }
    }
  }

  // Moves what is readable one way; false when that side closed or failed.
  bool forward(Pair& pair, bool fromInitiator) {
    std::uint8_t bytes[65536];
    const ssize_t got =
        ::recv(fromInitiator ? pair.initiator : pair.target, bytes, sizeof(bytes), MSG_DONTWAIT);
    if (got <= 0) return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    const auto size = static_cast<std::uint64_t>(got);
    if (fromInitiator && pair.first) {
      if (change_ && change_->offset >= pair.forwarded && change_->offset < pair.forwarded + size) {
        bytes[change_->offset - pair.forwarded] ^= change_->mask;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      recorded_.insert(recorded_.end(), bytes, bytes + size);
    }
    if (fromInitiator) pair.forwarded += size;
    const int to = fromInitiator ? pair.target : pair.initiator;
    for (std::uint64_t sent = 0; sent < size;) {
      const ssize_t put = ::send(to, bytes + sent, size - sent, MSG_NOSIGNAL);
      if (put <= 0) return false;
      sent += static_cast<std::uint64_t>(put);
    }
    return true;
  }

  std::uint16_t targetPort_;
  std::optional<Change> change_;
  int listenFd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<std::uint8_t> recorded_;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace kvx::test
