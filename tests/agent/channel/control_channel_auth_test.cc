// kvx-test-labels: unit
// Control channel authentication: the mutual HMAC challenge-response before Hello, what
// each kind of misconfiguration or misbehaviour gets, and that the listener keeps serving.
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "agent/channel/auth_proof.h"
#include "agent/channel/frame_seal.h"
#include "kvx/agent.h"
#include "tests/agent/channel/control_channel_fixture.h"

using namespace kvx::test::channel_fixture;

namespace {

ChannelOptions tokenOptions(const std::string& token, std::chrono::milliseconds readTimeout = 5s) {
  ChannelOptions options = TestChannel::defaultOptions(readTimeout);
  options.authToken = token;
  return options;
}

std::optional<ErrorMessage> errorIn(const std::vector<Frame>& frames) {
  for (const Frame& frame : frames) {
    auto message = decodeMessage(frame);
    if (message.isOk() && std::holds_alternative<ErrorMessage>(*message)) {
      return std::get<ErrorMessage>(*message);
    }
  }
  return std::nullopt;
}

bool anyHelloAck(const std::vector<Frame>& frames) {
  for (const Frame& frame : frames) {
    if (frame.type == static_cast<std::uint16_t>(MessageType::kHelloAck)) return true;
  }
  return false;
}

AuthBytes nonceOf(std::uint8_t value) {
  AuthBytes bytes{};
  bytes.fill(value);
  return bytes;
}

// Reads the server's auth_challenge on `raw`.
AuthChallenge readChallenge(RawClient& raw) {
  auto message = decodeMessage(raw.readFrame());
  REQUIRE(message.isOk());
  REQUIRE(std::holds_alternative<AuthChallenge>(*message));
  return std::get<AuthChallenge>(*message);
}

// The two directions of a raw client's authenticated connection, sealed as a real client
// seals them (frame_seal.h).
struct RawSeals {
  FrameSeal toServer;
  FrameSeal fromServer;
};

RawSeals sealsFor(const AuthBytes& clientNonce, const AuthChallenge& challenge) {
  const FrameKeys keys = frameKeys(kSharedToken, clientNonce, challenge.nonce);
  return RawSeals{FrameSeal(keys.clientToServer), FrameSeal(keys.serverToClient)};
}

// The next frame from the server on `raw`, its seal checked and removed.
kvx::Result<Message> readSealed(RawClient& raw, FrameSeal& fromServer) {
  Frame frame = raw.readFrame();
  KVX_RETURN_IF_ERROR(fromServer.open(frame));
  return decodeMessage(frame);
}

}  // namespace

TEST_CASE("the same token on both sides: mutual authentication, then metadata both ways") {
  TestChannel server("server", tokenOptions(kSharedToken));
  TestChannel client("client", tokenOptions(kSharedToken));
  auto remote = client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
  REQUIRE(remote.isOk());
  CHECK(sameMetadata(*remote, sampleMetadata("server")));
  REQUIRE(server.events.waitFor([&] { return server.events.hellos.size() == 1; }));
  CHECK(sameMetadata(server.events.hellos[0], sampleMetadata("client")));

  REQUIRE(server.channel->broadcastMetadata(sampleMetadata("server", 3)).isOk());
  REQUIRE(client.events.waitFor([&] { return client.events.updates.size() == 1; }));
  REQUIRE(client.channel->broadcastMetadata(sampleMetadata("client", 4)).isOk());
  REQUIRE(server.events.waitFor([&] { return server.events.updates.size() == 1; }));
}

TEST_CASE("a hello larger than the frame limit before authentication passes once authenticated") {
  const PeerMetadata large = sampleMetadata("client", 400);
  const std::vector<std::uint8_t> hello = encodeMessage(Hello{large, std::nullopt});
  REQUIRE(hello.size() > kMaxUnauthenticatedFrameBytes);
  TestChannel server("server", tokenOptions(kSharedToken));
  SECTION("the response and the hello in one write") {
    // As a client may send them: the server must check the hello's header against the limit
    // of an authenticated peer, though both arrive in one read.
    RawClient raw(server.address());
    const AuthBytes clientNonce = nonceOf(7);
    raw.send(encodeMessage(AuthBegin{clientNonce}));
    const AuthChallenge challenge = readChallenge(raw);
    RawSeals seals = sealsFor(clientNonce, challenge);
    std::vector<std::uint8_t> both =
        encodeMessage(AuthResponse{clientProof(kSharedToken, challenge.nonce, clientNonce)});
    const std::vector<std::uint8_t> sealedHello = seals.toServer.seal(hello);
    both.insert(both.end(), sealedHello.begin(), sealedHello.end());
    raw.send(both);
    auto ack = readSealed(raw, seals.fromServer);
    INFO(ack.status().toString());
    REQUIRE(ack.isOk());
    CHECK(std::holds_alternative<HelloAck>(*ack));
  }
  SECTION("a real connect") {
    TestChannel client("client", tokenOptions(kSharedToken));
    auto remote = client.channel->connect(server.address(), large, deadlineIn(5s));
    INFO(remote.status().toString());
    REQUIRE(remote.isOk());
    REQUIRE(server.events.waitFor([&] { return server.events.hellos.size() == 1; }));
    CHECK(sameMetadata(server.events.hellos[0], large));
  }
}

TEST_CASE("a wrong token fails clearly on both sides; the listener keeps serving") {
  TestChannel server("server", tokenOptions(kSharedToken));
  TestChannel impostor("impostor", tokenOptions("another-secret-of-some-length"));
  auto remote =
      impostor.channel->connect(server.address(), sampleMetadata("impostor"), deadlineIn(5s));
  REQUIRE_FALSE(remote.isOk());
  CHECK(remote.status().code() == StatusCode::kUnauthenticated);
  CHECK_THAT(remote.status().message(),
             Catch::Contains("peer at " + server.address() + " failed authentication") &&
                 Catch::Contains("tokens differ") && !Catch::Contains(kSharedToken));
  CHECK(hellosSeen(server) == 0);
  requireRealConnectWorks(server, tokenOptions(kSharedToken));
}

TEST_CASE("a token on one side only fails clearly on both sides") {
  SECTION("the listener requires authentication, the client has no token") {
    TestChannel server("server", tokenOptions(kSharedToken));
    TestChannel client("client");
    auto remote =
        client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
    REQUIRE_FALSE(remote.isOk());
    CHECK(remote.status().code() == StatusCode::kUnauthenticated);
    CHECK_THAT(remote.status().message(),
               Catch::Contains("peer at " + server.address() + " requires authentication") &&
                   Catch::Contains("did not authenticate"));
    CHECK(hellosSeen(server) == 0);  // the hello's metadata was not handed on
    requireRealConnectWorks(server, tokenOptions(kSharedToken));
  }
  SECTION("the client has a token, the listener none: the client sends no metadata") {
    TestChannel server("server");
    TestChannel client("client", tokenOptions(kSharedToken));
    auto remote =
        client.channel->connect(server.address(), sampleMetadata("client"), deadlineIn(5s));
    REQUIRE_FALSE(remote.isOk());
    CHECK(remote.status().code() == StatusCode::kUnauthenticated);
    CHECK_THAT(remote.status().message(),
               Catch::Contains("peer at " + server.address() + " did not authenticate") &&
                   Catch::Contains("this agent has no auth token"));
    CHECK(hellosSeen(server) == 0);
    requireRealConnectWorks(server);
  }
}

TEST_CASE("raw clients that skip or stall the authentication are closed alone") {
  TestChannel server("server", tokenOptions(kSharedToken, 300ms));
  std::vector<Frame> frames;

  SECTION("hello without authenticating: UNAUTHENTICATED and no metadata") {
    RawClient raw(server.address());
    raw.send(encodeMessage(Hello{sampleMetadata("raw"), std::nullopt}));
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_FALSE(anyHelloAck(frames));
    auto error = errorIn(frames);
    REQUIRE(error);
    CHECK(error->code == "UNAUTHENTICATED");
    CHECK_THAT(error->message, Catch::Contains("did not authenticate: it sent hello first"));
  }
  SECTION("stalls after the challenge: closed at the handshake deadline") {
    RawClient raw(server.address());
    raw.send(encodeMessage(AuthBegin{nonceOf(1)}));
    readChallenge(raw);
    const auto start = kvx::Clock::now();
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK(kvx::Clock::now() - start < 2s);
    auto error = errorIn(frames);
    REQUIRE(error);
    CHECK(error->code == "TIMED_OUT");
  }
  SECTION("a hello in place of the response") {
    RawClient raw(server.address());
    raw.send(encodeMessage(AuthBegin{nonceOf(1)}));
    readChallenge(raw);
    raw.send(encodeMessage(Hello{sampleMetadata("raw"), std::nullopt}));
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_FALSE(anyHelloAck(frames));
    REQUIRE(errorIn(frames));
    CHECK(errorIn(frames)->code == "UNAUTHENTICATED");
    CHECK_THAT(errorIn(frames)->message, Catch::Contains("expected auth_response, got hello"));
  }
  SECTION("a large frame before authenticating: refused at its header, its payload never read") {
    // A client without the token could make the channel thread read and parse 16 MiB.
    RawClient raw(server.address());
    const std::vector<std::uint8_t> frame =
        encodeFrame(MessageType::kHello, std::string(1u << 20, ' '));
    raw.send(std::vector<std::uint8_t>(frame.begin(), frame.begin() + kFrameHeaderBytes));
    REQUIRE(raw.readUntilClosed(&frames));
    REQUIRE(errorIn(frames));
    CHECK(errorIn(frames)->code == "PROTOCOL_ERROR");
    CHECK_THAT(errorIn(frames)->message, Catch::Contains("exceeds the 16384-byte limit"));
  }
  CHECK(hellosSeen(server) == 0);
  requireRealConnectWorks(server, tokenOptions(kSharedToken));
}

TEST_CASE("a proof made for one connection is refused on another") {
  TestChannel server("server", tokenOptions(kSharedToken));
  const AuthBytes clientNonce = nonceOf(5);

  // A legitimate exchange, recorded.
  RawClient first(server.address());
  first.send(encodeMessage(AuthBegin{clientNonce}));
  const AuthChallenge challenge = readChallenge(first);
  CHECK(proofMatches(serverProof(kSharedToken, clientNonce, challenge.nonce), challenge.proof));
  const AuthResponse response{clientProof(kSharedToken, challenge.nonce, clientNonce)};
  first.send(encodeMessage(response));
  RawSeals seals = sealsFor(clientNonce, challenge);
  first.send(seals.toServer.seal(encodeMessage(Hello{sampleMetadata("first"), std::nullopt})));
  auto ack = readSealed(first, seals.fromServer);
  REQUIRE(ack.isOk());
  CHECK(std::holds_alternative<HelloAck>(*ack));

  // The same client nonce again gets a fresh server nonce, so the old response is stale.
  RawClient replay(server.address());
  replay.send(encodeMessage(AuthBegin{clientNonce}));
  const AuthChallenge second = readChallenge(replay);
  CHECK(second.nonce != challenge.nonce);
  replay.send(encodeMessage(response));
  replay.send(encodeMessage(Hello{sampleMetadata("replay"), std::nullopt}));
  std::vector<Frame> frames;
  REQUIRE(replay.readUntilClosed(&frames));
  CHECK_FALSE(anyHelloAck(frames));
  auto error = errorIn(frames);
  REQUIRE(error);
  CHECK(error->code == "UNAUTHENTICATED");
  CHECK_THAT(error->message, Catch::Contains("failed authentication"));
  REQUIRE(server.events.waitFor([&] { return server.events.hellos.size() == 1; }));
  CHECK(server.events.hellos[0].name == "first");
}

TEST_CASE(
    "after authentication, a frame without its seal, or changed, or replayed, ends the link") {
  TestChannel server("server", tokenOptions(kSharedToken));
  // Authenticates a raw client the way a real one does, up to the hello.
  auto authenticate = [&](RawClient& raw, std::uint8_t nonce) {
    const AuthBytes clientNonce = nonceOf(nonce);
    raw.send(encodeMessage(AuthBegin{clientNonce}));
    const AuthChallenge challenge = readChallenge(raw);
    raw.send(encodeMessage(AuthResponse{clientProof(kSharedToken, challenge.nonce, clientNonce)}));
    return sealsFor(clientNonce, challenge);
  };
  const std::vector<std::uint8_t> hello =
      encodeMessage(Hello{sampleMetadata("rewritten"), std::nullopt});
  auto requireRefused = [&](RawClient& raw, const char* what) {
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    INFO(what);
    CHECK_FALSE(anyHelloAck(frames));
  };

  SECTION("a hello without a seal, as a party on the path would send one") {
    RawClient raw(server.address());
    (void)authenticate(raw, 21);
    raw.send(hello);
    requireRefused(raw, "unsealed hello");
  }
  SECTION("a sealed hello with one byte changed") {
    RawClient raw(server.address());
    RawSeals seals = authenticate(raw, 22);
    std::vector<std::uint8_t> sealed = seals.toServer.seal(hello);
    sealed[kFrameHeaderBytes + 10] ^= 0x01;
    raw.send(sealed);
    requireRefused(raw, "changed hello");
  }
  SECTION("a sealed hello from another connection") {
    RawClient other(server.address());
    RawSeals otherSeals = authenticate(other, 23);
    RawClient raw(server.address());
    (void)authenticate(raw, 24);
    raw.send(otherSeals.toServer.seal(hello));
    requireRefused(raw, "hello sealed for another connection");
  }
  SECTION("a sealed frame sent twice") {
    RawClient raw(server.address());
    RawSeals seals = authenticate(raw, 25);
    const std::vector<std::uint8_t> sealed = seals.toServer.seal(hello);
    raw.send(sealed);
    auto ack = readSealed(raw, seals.fromServer);
    REQUIRE(ack.isOk());
    CHECK(std::holds_alternative<HelloAck>(*ack));
    raw.send(sealed);  // replayed: its sequence number is spent
    std::vector<Frame> frames;
    CHECK(raw.readUntilClosed(&frames));
  }
  CHECK(hellosSeen(server) <= 1);
  requireRealConnectWorks(server, tokenOptions(kSharedToken));
}

TEST_CASE("a listener that never answers the challenge fails connect by its deadline") {
  // A bound, listening socket nobody accepts on: TCP connects, nothing ever replies.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  const std::string silent = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  TestChannel client("client", tokenOptions(kSharedToken));
  const auto start = kvx::Clock::now();
  auto remote = client.channel->connect(silent, sampleMetadata("client"), deadlineIn(300ms));
  CHECK(remote.status().code() == StatusCode::kTimedOut);
  CHECK(kvx::Clock::now() - start < 2s);
  ::close(fd);
}

TEST_CASE("authentication options are checked") {
  ChannelOptions options = tokenOptions("short");
  auto status = validateChannelOptions(options);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(status.message(),
             Catch::Contains("5 bytes; at least 16") && !Catch::Contains("'short'"));

  options = ChannelOptions{};
  options.listenAddress = "0.0.0.0:0";
  status = validateChannelOptions(options);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("not a loopback address") &&
                                   Catch::Contains("KVX_AUTH_TOKEN") &&
                                   Catch::Contains("--insecure"));
  options.allowUnauthenticated = true;
  CHECK(validateChannelOptions(options).isOk());
  options.allowUnauthenticated = false;
  options.authToken = kSharedToken;
  CHECK(validateChannelOptions(options).isOk());
  options.listenAddress = "[::1]:0";
  options.authToken.clear();
  CHECK(validateChannelOptions(options).isOk());
  options.listenAddress = "";
  CHECK(validateChannelOptions(options).isOk());
}

TEST_CASE("Agent::create takes the token from its options, a file or KVX_AUTH_TOKEN") {
  kvx::AgentOptions options;
  options.name = "a";
  options.transport = "inproc";
  options.listenAddress = "0.0.0.0:0";
  auto refused = kvx::Agent::create(options);
  if (std::getenv("KVX_AUTH_TOKEN") == nullptr) {
    REQUIRE_FALSE(refused.isOk());
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(refused.status().message(), Catch::StartsWith("agent 'a': listen address"));
  }
  options.authTokenFile = "/nonexistent/kvx.token";
  CHECK(kvx::Agent::create(options).status().code() == StatusCode::kNotFound);
  options.authTokenFile.clear();
  options.authToken = kSharedToken;
  CHECK(kvx::Agent::create(options).isOk());
  options.authToken.clear();
  options.allowUnauthenticated = true;
  CHECK(kvx::Agent::create(options).isOk());
}
