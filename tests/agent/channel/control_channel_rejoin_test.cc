// kvx-test-labels: unit
#include <catch2/catch.hpp>

#include "tests/agent/channel/control_channel_fixture.h"

using namespace kvx::test::channel_fixture;

// ControlChannel: a second handshake between agents whose views of each other differ
// (messages/rejoin.h). The first connect makes a link both keep; the second finds it.

namespace {

std::size_t startedOver(TestChannel& channel) {
  std::lock_guard lock(channel.events.mutex);
  return channel.events.startedOver.size();
}

void connectOnce(TestChannel& client, TestChannel& server) {
  auto remote =
      client.channel->connect(server.address(), sampleMetadata(client.name), deadlineIn(5s));
  REQUIRE(remote.isOk());
  CHECK(remote->name == server.name);
}

}  // namespace

TEST_CASE("a client that dropped a server which still knows it has the server start over") {
  TestChannel client("client");
  TestChannel server("server");
  connectOnce(client, server);
  // The server keeps what it holds for the client; the client dropped the server (as after
  // its data path to it failed) but its old link is still up.
  server.holdsEveryone = true;
  connectOnce(client, server);
  // Before the connect returned, not eventually: the client may send at once.
  REQUIRE(startedOver(server) == 1);
  CHECK(startedOver(client) == 0);
  std::lock_guard lock(server.events.mutex);
  CHECK(server.events.startedOver[0].first == "client");
  CHECK(server.events.startedOver[0].second.code() == StatusCode::kPeerFailed);
  CHECK_THAT(server.events.startedOver[0].second.message(),
             Catch::Contains("connected again without the state of its session"));
}

TEST_CASE("a client that still knows a server which no longer knows it starts over itself") {
  TestChannel client("client");
  TestChannel server("server");
  connectOnce(client, server);
  client.holdsEveryone = true;
  connectOnce(client, server);
  REQUIRE(startedOver(client) == 1);
  CHECK(startedOver(server) == 0);
  std::lock_guard lock(client.events.mutex);
  CHECK(client.events.startedOver[0].first == "server");
  CHECK_THAT(client.events.startedOver[0].second.message(),
             Catch::Contains("no longer knew this agent"));
}

TEST_CASE("agents that both know each other, or that met only now, do not start over") {
  TestChannel client("client");
  TestChannel server("server");
  const bool known = GENERATE(true, false);
  client.holdsEveryone = known;
  server.holdsEveryone = known;
  // The first link: nobody knows anybody over a live link yet.
  connectOnce(client, server);
  // A second link each way.
  connectOnce(client, server);
  connectOnce(server, client);
  CHECK(startedOver(client) == 0);
  CHECK(startedOver(server) == 0);
  // Both links stay usable: an update reaches the client over each of them.
  REQUIRE(server.channel->broadcastMetadata(sampleMetadata("server", 4)).isOk());
  REQUIRE(client.events.waitFor([&] { return client.events.updates.size() >= 2; }));
}

TEST_CASE("a rejoin the server did not ask for ends the link") {
  TestChannel server("server");
  RawClient raw(server.address());
  raw.send(encodeMessage(Hello{sampleMetadata("raw"), std::nullopt, std::nullopt}));
  auto ack = decodeMessage(raw.readFrame());
  REQUIRE(ack.isOk());
  REQUIRE(std::holds_alternative<HelloAck>(*ack));
  CHECK(std::get<HelloAck>(*ack).knewYou == std::optional<bool>(false));
  raw.send(encodeMessage(Rejoin{}));
  std::vector<Frame> frames;
  REQUIRE(raw.readUntilClosed(&frames));
  CHECK_THAT(errorText(frames), Catch::Contains("unexpected rejoin"));
  CHECK(startedOver(server) == 0);
}
