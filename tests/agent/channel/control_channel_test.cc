// kvx-test-labels: unit
#include <catch2/catch.hpp>

#include "tests/agent/channel/control_channel_fixture.h"

using namespace kvx::test::channel_fixture;

// ControlChannel: handshakes, updates, connect failures, stop and disconnect events.

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
  halfHello.send(header(kProtocolVersion, 1, 1000));
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

TEST_CASE("disconnecting the links older than a moment keeps the ones made since") {
  TestChannel a("agent-a");
  TestChannel b("agent-b");
  REQUIRE(a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s)).isOk());
  std::this_thread::sleep_for(10ms);
  const auto between = kvx::Clock::now();
  std::this_thread::sleep_for(10ms);
  // A second link from the same agent: its reconnect after whatever ended the first one.
  REQUIRE(a.channel->connect(b.address(), sampleMetadata("agent-a"), deadlineIn(5s)).isOk());

  REQUIRE(b.channel->disconnectOlderThan("agent-a", between).isOk());
  // Only the old link went: agent-a still has a link to agent-b, which still carries updates.
  REQUIRE(b.events.waitFor([&] { return b.events.hellos.size() == 2; }));
  std::this_thread::sleep_for(100ms);
  {
    std::lock_guard lock(a.events.mutex);
    CHECK(a.events.disconnects.empty());
  }
  REQUIRE(b.channel->broadcastMetadata(sampleMetadata("agent-b", 3)).isOk());
  REQUIRE(a.events.waitFor([&] { return a.events.updates.size() == 1; }));
  // Nothing is older than that now; the remaining link goes with a plain disconnect.
  CHECK(b.channel->disconnectOlderThan("agent-a", between).code() == StatusCode::kNotFound);
  REQUIRE(b.channel->disconnect("agent-a").isOk());
  REQUIRE(a.events.waitFor([&] { return a.events.disconnects.size() == 1; }));
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
