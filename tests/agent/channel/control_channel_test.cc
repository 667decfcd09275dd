// kvx-test-labels: unit
// Loopback only: two channels in one process, plus raw POSIX clients that misbehave.
#include "agent/channel/control_channel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
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

#include "agent/channel/frame.h"
#include "agent/channel/host_port.h"
#include "agent/channel/messages/message.h"
#include "tests/agent/metadata/sample_metadata.h"

using namespace std::chrono_literals;
using kvx::deadlineIn;
using kvx::Status;
using kvx::StatusCode;
using kvx::engine::PeerMetadata;
using kvx::test::sameMetadata;
using kvx::test::sampleMetadata;
using namespace kvx::agent::channel;

namespace {

// What a channel's handlers saw; waited on by the test thread.
struct Events {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<PeerMetadata> hellos;
  std::vector<PeerMetadata> updates;
  std::vector<std::pair<std::string, Status>> disconnects;

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

  explicit TestChannel(std::string agentName, std::chrono::milliseconds readTimeout = 5s,
                       std::uint32_t maxFrameBytes = 1u << 20)
      : name(std::move(agentName)) {
    ChannelOptions options;
    options.listenAddress = "127.0.0.1:0";
    options.readTimeout = readTimeout;
    options.maxFrameBytes = maxFrameBytes;
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
    };
    handlers.onPeerDisconnected = [this](const std::string& peer, const Status& why) {
      {
        std::lock_guard lock(events.mutex);
        events.disconnects.emplace_back(peer, why);
      }
      events.changed.notify_all();
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

std::vector<std::uint8_t> header(std::uint16_t version, std::uint16_t type, std::uint32_t length) {
  std::vector<std::uint8_t> bytes = encodeFrame(type, "");
  bytes[4] = static_cast<std::uint8_t>(version >> 8);
  bytes[5] = static_cast<std::uint8_t>(version);
  bytes[8] = static_cast<std::uint8_t>(length >> 24);
  bytes[9] = static_cast<std::uint8_t>(length >> 16);
  bytes[10] = static_cast<std::uint8_t>(length >> 8);
  bytes[11] = static_cast<std::uint8_t>(length);
  return bytes;
}

std::string errorText(const std::vector<Frame>& frames) {
  for (const Frame& frame : frames) {
    auto message = decodeMessage(frame);
    if (message.isOk() && std::holds_alternative<ErrorMessage>(*message)) {
      return std::get<ErrorMessage>(*message).message;
    }
  }
  return "(no error message)";
}

void requireRealConnectWorks(TestChannel& server) {
  TestChannel client("prober");
  auto remote = client.channel->connect(server.address(), sampleMetadata("prober"), deadlineIn(5s));
  REQUIRE(remote.isOk());
  CHECK(remote->name == server.name);
}

std::string unusedPort() {
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

}  // namespace

TEST_CASE("two channels handshake and exchange metadata both ways") {
  TestChannel a("agent-a");
  TestChannel b("agent-b");
  CHECK(b.address().rfind("127.0.0.1:", 0) == 0);
  CHECK(b.address() != "127.0.0.1:0");

  auto remote = a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s));
  REQUIRE(remote.isOk());
  CHECK(sameMetadata(*remote, sampleMetadata("agent-b")));
  REQUIRE(b.events.waitFor([&] { return b.events.hellos.size() == 1; }));
  CHECK(sameMetadata(b.events.hellos[0], sampleMetadata("agent-a")));

  // The server side of the link reaches the client...
  REQUIRE(b.channel->broadcastMetadata(sampleMetadata("agent-b", 5)).isOk());
  REQUIRE(a.events.waitFor([&] { return a.events.updates.size() == 1; }));
  CHECK(sameMetadata(a.events.updates[0], sampleMetadata("agent-b", 5)));
  // ...and the client side reaches the server.
  REQUIRE(a.channel->broadcastMetadata(sampleMetadata("agent-a", 3)).isOk());
  REQUIRE(b.events.waitFor([&] { return b.events.updates.size() == 1; }));
  CHECK(sameMetadata(b.events.updates[0], sampleMetadata("agent-a", 3)));
}

TEST_CASE("broadcastMetadata reaches every peer in either direction") {
  TestChannel hub("hub");
  TestChannel in1("in-1");
  TestChannel in2("in-2");
  TestChannel out("out");
  REQUIRE(in1.channel->connect(hub.address(), sampleMetadata("in-1"), deadlineIn(5s)).isOk());
  REQUIRE(in2.channel->connect(hub.address(), sampleMetadata("in-2"), deadlineIn(5s)).isOk());
  REQUIRE(hub.channel->connect(out.address(), sampleMetadata("hub"), deadlineIn(5s)).isOk());
  REQUIRE(hub.channel->broadcastMetadata(sampleMetadata("hub", 4)).isOk());
  for (TestChannel* peer : {&in1, &in2, &out}) {
    REQUIRE(peer->events.waitFor([&] { return peer->events.updates.size() == 1; }));
    CHECK(sameMetadata(peer->events.updates[0], sampleMetadata("hub", 4)));
  }
  // Invalid local metadata is refused before anything is sent.
  auto bad = sampleMetadata("hub");
  bad.name = "no spaces allowed";
  CHECK(hub.channel->broadcastMetadata(bad).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("connect from several threads at once") {
  TestChannel server("server");
  TestChannel client("client");
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s))
              .isOk()) {
        ++ok;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(ok == 8);
  REQUIRE(client.channel->broadcastMetadata(sampleMetadata("client", 1)).isOk());
  CHECK(server.events.waitFor([&] { return server.events.updates.size() == 8; }));
}

TEST_CASE("misbehaving raw clients are closed and the channel keeps serving") {
  TestChannel server("server", 200ms);

  SECTION("garbage") {
    RawClient raw(server.address());
    raw.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("frame magic 0x47455420 is not KVXC"));
  }
  SECTION("wrong protocol version") {
    RawClient raw(server.address());
    raw.send(header(7, 1, 2));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("protocol version 7 unsupported"));
  }
  SECTION("oversized length header") {
    RawClient raw(server.address());
    raw.send(header(1, 1, 32u << 20));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames),
               Catch::Contains("frame of 33554432 bytes exceeds the 1048576-byte limit"));
  }
  SECTION("truncated frame, then close") {
    RawClient raw(server.address());
    auto bytes = encodeMessage(Hello{sampleMetadata("raw"), std::nullopt});
    bytes.resize(bytes.size() / 2);
    raw.send(bytes);
    raw.shutdownWrite();
    REQUIRE(raw.readUntilClosed());
  }
  SECTION("nothing at all (slowloris) is closed after readTimeout") {
    RawClient raw(server.address());
    const auto start = kvx::Clock::now();
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    const auto elapsed = kvx::Clock::now() - start;
    CHECK(elapsed >= 150ms);
    CHECK(elapsed < 2s);
    CHECK_THAT(errorText(frames), Catch::Contains("by the read deadline"));
  }
  SECTION("half a header, then nothing") {
    RawClient raw(server.address());
    raw.send(std::vector<std::uint8_t>{0x4B, 0x56, 0x58});
    const auto start = kvx::Clock::now();
    REQUIRE(raw.readUntilClosed());
    CHECK(kvx::Clock::now() - start < 2s);
  }
  SECTION("a valid frame that is not a hello") {
    RawClient raw(server.address());
    raw.send(encodeMessage(Goodbye{"hi"}));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames),
               Catch::Contains("expected hello as the first message, got goodbye"));
  }
  SECTION("a hello with a malformed field") {
    RawClient raw(server.address());
    auto hello = Hello{sampleMetadata("raw"), std::nullopt}.toJson();
    hello["metadata"]["regions"][1]["length"] = "lots";
    raw.send(encodeFrame(MessageType::kHello, hello.dump()));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames),
               Catch::Contains("hello.metadata.regions[1].length: expected unsigned integer, got "
                               "string"));
  }
  SECTION("an unknown message type") {
    RawClient raw(server.address());
    raw.send(encodeFrame(std::uint16_t{999}, "{}"));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("unknown message type 999"));
  }
  {
    std::lock_guard lock(server.events.mutex);
    CHECK(server.events.disconnects.empty());  // none of them completed a handshake
  }
  requireRealConnectWorks(server);
}

TEST_CASE("a peer breaking the protocol after the handshake is dropped alone") {
  TestChannel server("server", 200ms);
  TestChannel good("good");
  REQUIRE(good.channel->connect(server.address(), sampleMetadata("good"), deadlineIn(5s)).isOk());

  RawClient raw(server.address());
  raw.send(encodeMessage(Hello{sampleMetadata("raw"), "decode"}));
  auto ack = decodeMessage(raw.readFrame());
  REQUIRE(ack.isOk());
  REQUIRE(std::holds_alternative<HelloAck>(*ack));
  CHECK(std::get<HelloAck>(*ack).metadata.name == "server");

  SECTION("metadata update under another name") {
    raw.send(encodeMessage(MetadataUpdate{sampleMetadata("impostor")}));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("metadata_update.metadata.name"));
    REQUIRE(server.events.waitFor([&] { return server.events.disconnects.size() == 1; }));
    CHECK(server.events.disconnects[0].first == "raw");
    CHECK(server.events.disconnects[0].second.code() == StatusCode::kProtocolError);
  }
  SECTION("a frame left incomplete after the handshake") {
    raw.send(header(1, 3, 100));
    REQUIRE(raw.readUntilClosed());
    REQUIRE(server.events.waitFor([&] { return server.events.disconnects.size() == 1; }));
    CHECK(server.events.disconnects[0].second.code() == StatusCode::kTimedOut);
  }
  SECTION("idle after the handshake is fine") {
    std::this_thread::sleep_for(500ms);
    raw.send(encodeMessage(MetadataUpdate{sampleMetadata("raw", 1)}));
    REQUIRE(server.events.waitFor([&] { return server.events.updates.size() == 1; }));
    CHECK(server.events.disconnects.empty());
  }
  // The well-behaved peer is unaffected.
  REQUIRE(server.channel->broadcastMetadata(sampleMetadata("server", 3)).isOk());
  REQUIRE(good.events.waitFor([&] { return good.events.updates.size() == 1; }));
}

TEST_CASE("onHello returning an error fails connect with that error") {
  TestChannel server("server");
  server.onHello = [](const PeerMetadata& remote) -> kvx::Result<PeerMetadata> {
    return kvx::alreadyExists("an agent named '" + remote.name + "' is already connected");
  };
  TestChannel client("client");
  auto result = client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == StatusCode::kAlreadyExists);
  CHECK_THAT(result.status().message(),
             Catch::Contains("rejected the hello: an agent named 'client' is already connected"));
  CHECK(client.events.disconnects.empty());
}

TEST_CASE("connect failures are quick and clear") {
  TestChannel client("client");
  const auto local = sampleMetadata("client");

  SECTION("no listener") {
    const auto start = kvx::Clock::now();
    auto result = client.channel->connect(unusedPort(), local, deadlineIn(5s));
    CHECK(kvx::Clock::now() - start < 1s);
    CHECK(result.status().code() == StatusCode::kPeerFailed);
    CHECK_THAT(result.status().message(), Catch::Contains("connect to 127.0.0.1:"));
    CHECK_THAT(result.status().message(), Catch::Contains("refused"));
  }
  SECTION("a deadline in the past") {
    TestChannel server("server");
    auto result = client.channel->connect(server.address(), local, kvx::Clock::now() - 1ms);
    CHECK(result.status().code() == StatusCode::kTimedOut);
  }
  SECTION("a listener that never answers") {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    const auto start = kvx::Clock::now();
    auto result = client.channel->connect("127.0.0.1:" + std::to_string(ntohs(address.sin_port)),
                                          local, deadlineIn(300ms));
    const auto elapsed = kvx::Clock::now() - start;
    ::close(fd);
    CHECK(result.status().code() == StatusCode::kTimedOut);
    CHECK(elapsed >= 250ms);
    CHECK(elapsed < 2s);
  }
  SECTION("bad addresses and bad local metadata") {
    CHECK(client.channel->connect("nonsense", local).status().code() ==
          StatusCode::kInvalidArgument);
    CHECK(client.channel->connect("127.0.0.1:0", local).status().code() ==
          StatusCode::kInvalidArgument);
    auto bad = local;
    bad.regions[1].info.id = bad.regions[0].info.id;
    auto result = client.channel->connect("127.0.0.1:1", bad);
    CHECK(result.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(result.status().message(), Catch::Contains("local metadata.regions[1].id"));
  }
}

TEST_CASE("stop() with open connections returns promptly") {
  TestChannel server("server", 5s);
  TestChannel client("client");
  REQUIRE(
      client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s)).isOk());
  RawClient silent(server.address());  // connected, says nothing, reads nothing
  RawClient halfHello(server.address());
  halfHello.send(header(1, 1, 1000));
  std::this_thread::sleep_for(50ms);

  const auto start = kvx::Clock::now();
  server.channel->stop();
  CHECK(kvx::Clock::now() - start < 1s);
  server.channel->stop();  // idempotent
  CHECK(server.channel->connect(client.address(), sampleMetadata("server")).status().code() ==
        StatusCode::kFailedPrecondition);
  CHECK(server.channel->broadcastMetadata(sampleMetadata("server")).code() ==
        StatusCode::kFailedPrecondition);
  CHECK(server.events.disconnects.empty());  // no handler runs once stop() has begun
}

TEST_CASE("onPeerDisconnected fires when the other side stops or disconnects") {
  TestChannel a("agent-a");
  TestChannel b("agent-b");

  SECTION("the server stops") {
    REQUIRE(a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s)).isOk());
    b.channel->stop();
    REQUIRE(a.events.waitFor([&] { return a.events.disconnects.size() == 1; }));
    CHECK(a.events.disconnects[0].first == "agent-b");
    CHECK(a.events.disconnects[0].second.code() == StatusCode::kCancelled);
    CHECK_THAT(a.events.disconnects[0].second.message(), Catch::Contains("said goodbye"));
  }
  SECTION("the client stops") {
    REQUIRE(a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s)).isOk());
    a.channel->stop();
    REQUIRE(b.events.waitFor([&] { return b.events.disconnects.size() == 1; }));
    CHECK(b.events.disconnects[0].first == "agent-a");
  }
  SECTION("disconnect() closes the link on both sides") {
    REQUIRE(a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s)).isOk());
    REQUIRE(b.events.waitFor([&] { return b.events.hellos.size() == 1; }));
    REQUIRE(b.channel->disconnect("agent-a").isOk());
    REQUIRE(a.events.waitFor([&] { return a.events.disconnects.size() == 1; }));
    REQUIRE(b.events.waitFor([&] { return b.events.disconnects.size() == 1; }));
    CHECK(a.events.disconnects[0].first == "agent-b");
    CHECK(b.events.disconnects[0].first == "agent-a");
    CHECK(b.channel->disconnect("agent-a").code() == StatusCode::kNotFound);
    // Reconnecting after a disconnect works.
    REQUIRE(a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s)).isOk());
  }
}

TEST_CASE("onPeerDisconnected waits for the last link to a peer name") {
  TestChannel a("agent-a");
  TestChannel b("agent-b");
  REQUIRE(a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s)).isOk());
  {
    // A second link under the same name, like a restarted agent's, then its loss.
    RawClient raw(b.address());
    raw.send(encodeMessage(Hello{sampleMetadata("agent-a"), std::nullopt}));
    auto ack = decodeMessage(raw.readFrame());
    REQUIRE(ack.isOk());
    REQUIRE(std::holds_alternative<HelloAck>(*ack));
  }
  std::this_thread::sleep_for(100ms);
  {
    std::lock_guard lock(b.events.mutex);
    CHECK(b.events.disconnects.empty());
  }
  REQUIRE(b.channel->broadcastMetadata(sampleMetadata("agent-b", 1)).isOk());
  REQUIRE(a.events.waitFor([&] { return a.events.updates.size() == 1; }));
  a.channel->stop();
  REQUIRE(b.events.waitFor([&] { return b.events.disconnects.size() == 1; }));
  CHECK(b.events.disconnects[0].first == "agent-a");
}

TEST_CASE("bad options are rejected at start") {
  ChannelOptions options;
  options.listenAddress = "127.0.0.1:99999";
  CHECK(ControlChannel::start(options, {}).status().code() == StatusCode::kInvalidArgument);
  options.listenAddress = "127.0.0.1:0";
  options.readTimeout = 0ms;
  CHECK(ControlChannel::start(options, {}).status().code() == StatusCode::kInvalidArgument);

  TestChannel first("first");
  options = ChannelOptions{};
  options.listenAddress = first.address();
  auto taken = ControlChannel::start(options, {});
  CHECK(taken.status().code() == StatusCode::kAlreadyExists);
  CHECK_THAT(taken.status().message(), Catch::Contains("cannot listen on " + first.address()));

  options.listenAddress = "";
  auto connectOnly = ControlChannel::start(options, {});
  REQUIRE(connectOnly.isOk());
  CHECK((*connectOnly)->listenAddress().empty());
  CHECK((*connectOnly)->connect(first.address(), sampleMetadata("co"), deadlineIn(5s)).isOk());
}
