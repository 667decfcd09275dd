// kvx-test-labels: unit
// Admission limits: connections per remote address, handshakes in progress per remote
// address and in all. An excess connection is refused at once with RESOURCE_EXHAUSTED; the
// others are unaffected.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "tests/agent/channel/control_channel_fixture.h"

using namespace kvx::test::channel_fixture;

namespace {

ChannelOptions limitedOptions(std::uint32_t perAddress, std::uint32_t handshakes,
                              std::chrono::milliseconds readTimeout = 5s) {
  ChannelOptions options = TestChannel::defaultOptions(readTimeout);
  options.maxConnectionsPerAddress = perAddress;
  options.maxPendingHandshakes = handshakes;
  return options;
}

// Sends a hello from source address `sourceIp` (any 127.x.y.z is loopback on Linux) and
// returns the type of the first frame of the reply.
std::uint16_t helloFrom(const std::string& sourceIp, const std::string& hostPort) {
  auto endpoint = parseHostPort(hostPort);
  REQUIRE(endpoint.isOk());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in source{};
  source.sin_family = AF_INET;
  REQUIRE(::inet_pton(AF_INET, sourceIp.c_str(), &source.sin_addr) == 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) == 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(endpoint->port());
  address.sin_addr.s_addr = htonl(endpoint->address().to_v4().to_uint());
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const auto hello = encodeMessage(Hello{sampleMetadata("from-" + sourceIp), std::nullopt});
  REQUIRE(::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(hello.size()));
  FrameDecoder decoder;
  std::uint8_t byte = 0;
  std::optional<Frame> frame;
  while (!(frame = decoder.next())) {
    REQUIRE(::recv(fd, &byte, 1, 0) == 1);
    REQUIRE(decoder.feed(std::span<const std::uint8_t>(&byte, 1)).isOk());
  }
  ::close(fd);
  return frame->type;
}

}  // namespace

TEST_CASE("connections beyond the per-address limit are refused at once") {
  TestChannel server("server", limitedOptions(2, 64));
  TestChannel a("a");
  TestChannel b("b");
  TestChannel c("c");
  REQUIRE(a.channel->connect(server.address(), sampleMetadata("a"), deadlineIn(5s)).isOk());
  REQUIRE(b.channel->connect(server.address(), sampleMetadata("b"), deadlineIn(5s)).isOk());

  const auto start = kvx::Clock::now();
  auto refused = c.channel->connect(server.address(), sampleMetadata("c"), deadlineIn(5s));
  CHECK(kvx::Clock::now() - start < 1s);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("127.0.0.1 already has 2 control connections") &&
                 Catch::Contains("maxConnectionsPerAddress 2"));

  // Another address is not limited by this one's connections.
  CHECK(helloFrom("127.0.0.2", server.address()) ==
        static_cast<std::uint16_t>(MessageType::kHelloAck));
  // The established peers are unaffected.
  REQUIRE(server.channel->broadcastMetadata(sampleMetadata("server", 3)).isOk());
  REQUIRE(a.events.waitFor([&] { return a.events.updates.size() == 1; }));
  REQUIRE(b.events.waitFor([&] { return b.events.updates.size() == 1; }));
  auto disconnected = [&](const std::string& peer) {
    for (const auto& [name, why] : server.events.disconnects) {
      if (name == peer) return true;
    }
    return false;
  };
  {
    std::lock_guard lock(server.events.mutex);
    CHECK_FALSE(disconnected("a"));
    CHECK_FALSE(disconnected("b"));
  }
  // A freed slot is usable again.
  REQUIRE(a.channel->disconnect("server").isOk());
  REQUIRE(server.events.waitFor([&] { return disconnected("a"); }));
  CHECK(c.channel->connect(server.address(), sampleMetadata("c"), deadlineIn(5s)).isOk());
}

TEST_CASE("handshakes beyond the limit are refused; those waiting are unaffected") {
  TestChannel server("server", limitedOptions(64, 2, 3s));
  RawClient first(server.address());
  RawClient second(server.address());
  // Let the channel accept both before the third arrives.
  std::this_thread::sleep_for(100ms);

  const auto start = kvx::Clock::now();
  RawClient third(server.address());
  std::vector<Frame> frames;
  REQUIRE(third.readUntilClosed(&frames));
  CHECK(kvx::Clock::now() - start < 1s);
  CHECK_THAT(errorText(frames), Catch::Contains("2 control handshakes are already in progress") &&
                                    Catch::Contains("maxPendingHandshakes 2"));
  for (int i = 0; i < 5; ++i) {  // a burst is refused as well (logged once)
    RawClient more(server.address());
    REQUIRE(more.readUntilClosed());
  }

  // The two waiting handshakes are still open and complete normally.
  CHECK(first.silentFor(50ms));
  first.send(encodeMessage(Hello{sampleMetadata("first"), std::nullopt}));
  CHECK(first.readFrame().type == static_cast<std::uint16_t>(MessageType::kHelloAck));
  second.send(encodeMessage(Hello{sampleMetadata("second"), std::nullopt}));
  CHECK(second.readFrame().type == static_cast<std::uint16_t>(MessageType::kHelloAck));
  // Established links no longer count as handshakes.
  requireRealConnectWorks(server);
}

TEST_CASE("silent handshakes from one address beyond its share are refused; others still connect") {
  ChannelOptions options = limitedOptions(64, 64, 3s);
  options.maxPendingHandshakesPerAddress = 3;
  TestChannel server("server", options);
  // Silent clients from 127.0.0.1 fill that address's share of the handshake slots.
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 3; ++i) silent.push_back(std::make_unique<RawClient>(server.address()));
  std::this_thread::sleep_for(100ms);

  const auto start = kvx::Clock::now();
  RawClient excess(server.address());
  std::vector<Frame> frames;
  REQUIRE(excess.readUntilClosed(&frames));
  CHECK(kvx::Clock::now() - start < 1s);
  CHECK_THAT(errorText(frames),
             Catch::Contains("127.0.0.1 already has 3 control handshakes in progress") &&
                 Catch::Contains("maxPendingHandshakesPerAddress 3"));

  // Another address still completes its handshake while those slots are held.
  CHECK(helloFrom("127.0.0.2", server.address()) ==
        static_cast<std::uint16_t>(MessageType::kHelloAck));
  // The silent connections are still open; one that finishes frees its address's slot.
  CHECK(silent[0]->silentFor(50ms));
  silent[0]->send(encodeMessage(Hello{sampleMetadata("first"), std::nullopt}));
  CHECK(silent[0]->readFrame().type == static_cast<std::uint16_t>(MessageType::kHelloAck));
  CHECK(helloFrom("127.0.0.1", server.address()) ==
        static_cast<std::uint16_t>(MessageType::kHelloAck));
}

TEST_CASE("admission limits are checked") {
  ChannelOptions options = limitedOptions(0, 1);
  CHECK(validateChannelOptions(options).code() == StatusCode::kInvalidArgument);
  options = limitedOptions(1, 0);
  CHECK_THAT(validateChannelOptions(options).message(),
             Catch::Contains("maxPendingHandshakes (0) must be at least 1"));
  options = limitedOptions(1, 1);
  options.maxPendingHandshakesPerAddress = 0;
  CHECK_THAT(validateChannelOptions(options).message(),
             Catch::Contains("maxPendingHandshakesPerAddress (0) must be at least 1"));
  CHECK(validateChannelOptions(limitedOptions(1, 1)).isOk());
}
