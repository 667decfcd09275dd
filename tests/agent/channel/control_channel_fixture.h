#pragma once

// Fixtures shared by the control channel tests: a channel with recorded events, a raw
// socket client that can send anything, and helpers.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/channel/control_channel.h"
#include "agent/channel/frame.h"
#include "agent/channel/host_port.h"
#include "agent/channel/messages/message.h"
#include "tests/agent/metadata/sample_metadata.h"

namespace kvx::test::channel_fixture {

using namespace std::chrono_literals;
using kvx::deadlineIn;
using kvx::Status;
using kvx::StatusCode;
using kvx::engine::PeerMetadata;
using kvx::test::sameMetadata;
using kvx::test::sampleMetadata;
using namespace kvx::agent::channel;

// The token both ends of an authenticated channel share in the auth and TLS tests.
inline const std::string kSharedToken = "a-shared-secret-of-some-length";

// What a channel's handlers saw; waited on by the test thread.
struct Events {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<PeerMetadata> hellos;
  std::vector<PeerMetadata> updates;
  std::vector<std::pair<std::string, Status>> disconnects;
  std::vector<std::pair<std::string, Status>> startedOver;  // onPeerStartedOver calls

  template <typename Pred>
  bool waitFor(Pred pred, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return pred(); });
  }
};

struct TestChannel {
  std::string name;
  Events events;
  std::unique_ptr<ControlChannel> channel;
  std::function<kvx::Result<PeerMetadata>(const PeerMetadata&)> onHello;
  // Runs on the channel's thread inside onMetadataUpdate, after the update is recorded (a
  // test may block there to stall the channel).
  std::function<void()> afterUpdate;
  // What holdsPeer answers; never set: the channel holds nobody. Set before connecting.
  std::atomic<bool> holdsEveryone{false};

  static ChannelOptions defaultOptions(std::chrono::milliseconds readTimeout = 5s,
                                       std::uint32_t maxFrameBytes = 1u << 20) {
    ChannelOptions options;
    options.listenAddress = "127.0.0.1:0";
    options.readTimeout = readTimeout;
    options.maxFrameBytes = maxFrameBytes;
    return options;
  }

  explicit TestChannel(std::string agentName, std::chrono::milliseconds readTimeout = 5s,
                       std::uint32_t maxFrameBytes = 1u << 20)
      : TestChannel(std::move(agentName), defaultOptions(readTimeout, maxFrameBytes)) {}

  TestChannel(std::string agentName, const ChannelOptions& options) : name(std::move(agentName)) {
    ChannelHandlers handlers;
    handlers.onHello = [this](const PeerMetadata& remote) -> kvx::Result<PeerMetadata> {
      {
        std::lock_guard lock(events.mutex);
        events.hellos.push_back(remote);
      }
      events.changed.notify_all();
      if (onHello) return onHello(remote);
      return sampleMetadata(name);
    };
    handlers.onMetadataUpdate = [this](const PeerMetadata& remote) {
      {
        std::lock_guard lock(events.mutex);
        events.updates.push_back(remote);
      }
      events.changed.notify_all();
      if (afterUpdate) afterUpdate();
    };
    handlers.onPeerDisconnected = [this](const std::string& peer, const Status& why) {
      {
        std::lock_guard lock(events.mutex);
        events.disconnects.emplace_back(peer, why);
      }
      events.changed.notify_all();
    };
    handlers.holdsPeer = [this](const PeerMetadata&) { return holdsEveryone.load(); };
    handlers.onPeerStartedOver = [this](const PeerMetadata& remote, const Status& why) {
      {
        std::lock_guard lock(events.mutex);
        events.startedOver.emplace_back(remote.name, why);
      }
      events.changed.notify_all();
      return Status::ok();
    };
    auto started = ControlChannel::start(options, handlers);
    REQUIRE(started.isOk());
    channel = std::move(started).value();
  }

  std::string address() const { return channel->listenAddress(); }
};

// A blocking POSIX client with a receive timeout, for sending what a real agent never would.
class RawClient {
 public:
  explicit RawClient(const std::string& hostPort) {
    auto endpoint = parseHostPort(hostPort);
    REQUIRE(endpoint.isOk());
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(endpoint->port());
    address.sin_addr.s_addr = htonl(endpoint->address().to_v4().to_uint());
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    timeval timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~RawClient() { ::close(fd_); }

  void send(const std::vector<std::uint8_t>& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  void send(const std::string& text) { send(std::vector<std::uint8_t>(text.begin(), text.end())); }
  void shutdownWrite() { ::shutdown(fd_, SHUT_WR); }

  // Reads until the server closes (true) or 5 s pass (false); `received` gets the frames.
  bool readUntilClosed(std::vector<Frame>* received = nullptr) {
    FrameDecoder decoder;
    std::uint8_t buffer[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0) break;
      if (n < 0) return errno == ECONNRESET;
      REQUIRE(
          decoder.feed(std::span<const std::uint8_t>(buffer, static_cast<std::size_t>(n))).isOk());
    }
    while (auto frame = decoder.next()) {
      if (received) received->push_back(std::move(*frame));
    }
    return true;
  }

  // True when nothing arrives (and the connection stays open) for `quiet`.
  bool silentFor(std::chrono::milliseconds quiet) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(quiet.count())) == 0;
  }

  // Reads exactly one frame (5 s timeout).
  Frame readFrame() {
    FrameDecoder decoder;
    std::uint8_t byte = 0;
    for (;;) {
      if (auto frame = decoder.next()) return *frame;
      REQUIRE(::recv(fd_, &byte, 1, 0) == 1);
      REQUIRE(decoder.feed(std::span<const std::uint8_t>(&byte, 1)).isOk());
    }
  }

 private:
  int fd_ = -1;
};

inline std::vector<std::uint8_t> header(std::uint16_t version, std::uint16_t type,
                                        std::uint32_t length) {
  std::vector<std::uint8_t> bytes = encodeFrame(type, "");
  bytes[4] = static_cast<std::uint8_t>(version >> 8);
  bytes[5] = static_cast<std::uint8_t>(version);
  bytes[8] = static_cast<std::uint8_t>(length >> 24);
  bytes[9] = static_cast<std::uint8_t>(length >> 16);
  bytes[10] = static_cast<std::uint8_t>(length >> 8);
  bytes[11] = static_cast<std::uint8_t>(length);
  return bytes;
}

inline std::string errorText(const std::vector<Frame>& frames) {
  for (const Frame& frame : frames) {
    auto message = decodeMessage(frame);
    if (message.isOk() && std::holds_alternative<ErrorMessage>(*message)) {
      return std::get<ErrorMessage>(*message).message;
    }
  }
  return "(no error message)";
}

// A fresh client with `clientOptions` (plain by default; a token or TLS where the server
// needs them) connects and finds the server under its name.
inline void requireRealConnectWorks(
    TestChannel& server, const ChannelOptions& clientOptions = TestChannel::defaultOptions()) {
  TestChannel client("prober", clientOptions);
  auto remote = client.channel->connect(server.address(), sampleMetadata("prober"), deadlineIn(5s));
  REQUIRE(remote.isOk());
  CHECK(remote->name == server.name);
}

// Hellos the server's channel handed on (an unauthenticated peer's must never get there).
inline std::size_t hellosSeen(TestChannel& channel) {
  std::lock_guard lock(channel.events.mutex);
  return channel.events.hellos.size();
}

inline std::string unusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

}  // namespace kvx::test::channel_fixture
