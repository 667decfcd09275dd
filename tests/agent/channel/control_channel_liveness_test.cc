// kvx-test-labels: unit
// Heartbeats and the peer timeout (ControlChannel liveness): a silent peer is declared failed
// within the bound, a live idle one never is, and peers without heartbeats keep working.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>

#include "kvx/agent.h"
#include "tests/agent/channel/control_channel_fixture.h"

using namespace kvx::test::channel_fixture;

namespace {

constexpr auto kTimeout = 300ms;
constexpr auto kInterval = 75ms;
// Scheduling slack allowed beyond the timeout on a loaded 2-core machine.
constexpr auto kMargin = 250ms;

ChannelOptions livenessOptions(std::chrono::milliseconds timeout = kTimeout,
                               std::chrono::milliseconds interval = kInterval) {
  ChannelOptions options = TestChannel::defaultOptions();
  options.peerTimeout = timeout;
  options.heartbeatInterval = interval;
  return options;
}

std::size_t disconnectCount(TestChannel& channel) {
  std::lock_guard lock(channel.events.mutex);
  return channel.events.disconnects.size();
}

// Stalls a channel's thread: stall() (in a handler) records when and blocks until open()
// or 10 s, so that nothing hangs when a check fails.
struct Stall {
  std::mutex mutex;
  std::condition_variable changed;
  bool opened = false;
  std::optional<kvx::Clock::time_point> at;

  void stall() {
    std::unique_lock lock(mutex);
    at = kvx::Clock::now();
    changed.notify_all();
    changed.wait_for(lock, 10s, [&] { return opened; });
  }
  void open() {
    std::lock_guard lock(mutex);
    opened = true;
    changed.notify_all();
  }
  kvx::Clock::time_point stalledAt() {
    std::lock_guard lock(mutex);
    return at.value_or(kvx::Clock::now());
  }
};

// Opens the stall when the test ends, before the stalled channel is destroyed.
struct OpenOnExit {
  std::shared_ptr<Stall> stall;
  ~OpenOnExit() { stall->open(); }
};

std::vector<std::uint8_t> helloWithTimeout(const std::string& name,
                                           std::optional<std::uint64_t> timeoutMs) {
  return encodeMessage(Hello{sampleMetadata(name), std::nullopt, timeoutMs});
}

}  // namespace

TEST_CASE("liveness options are checked") {
  for (auto [timeout, interval] : {std::pair{500ms, 500ms}, std::pair{400ms, 600ms},
                                   std::pair{2000ms, 5ms}, std::pair{0ms, 0ms}}) {
    auto started = ControlChannel::start(livenessOptions(timeout, interval), {});
    REQUIRE_FALSE(started.isOk());
    CHECK(started.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(started.status().message(),
               Catch::Contains("heartbeatInterval " + std::to_string(interval.count()) +
                               " ms and peerTimeout " + std::to_string(timeout.count()) + " ms") &&
                   Catch::Contains("10 ms <= heartbeatInterval < peerTimeout"));
  }
  CHECK(validateChannelOptions(livenessOptions(2000ms, 500ms)).isOk());
  CHECK(validateChannelOptions(livenessOptions(11ms, 10ms)).isOk());
}

TEST_CASE("Agent::create refuses liveness options that cannot work, naming them") {
  kvx::AgentOptions options;
  options.name = "a";
  options.transport = "inproc";
  options.peerTimeout = 500ms;
  options.heartbeatInterval = 500ms;
  auto agent = kvx::Agent::create(options);
  REQUIRE_FALSE(agent.isOk());
  CHECK(agent.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(agent.status().message(),
             Catch::StartsWith("agent 'a': heartbeatInterval 500 ms and peerTimeout 500 ms"));
  options.heartbeatInterval = 100ms;
  CHECK(kvx::Agent::create(options).isOk());
}

TEST_CASE("a live but idle link is not declared dead across several peer timeouts") {
  TestChannel a("a", livenessOptions());
  TestChannel b("b", livenessOptions());
  REQUIRE(a.channel->connect(b.address(), sampleMetadata("a"), deadlineIn(5s)).isOk());
  std::this_thread::sleep_for(kTimeout * 6);
  CHECK(disconnectCount(a) == 0);
  CHECK(disconnectCount(b) == 0);
  // The link still carries messages both ways.
  REQUIRE(a.channel->broadcastMetadata(sampleMetadata("a", 1)).isOk());
  REQUIRE(b.channel->broadcastMetadata(sampleMetadata("b", 1)).isOk());
  CHECK(b.events.waitFor([&] { return b.events.updates.size() == 1; }));
  CHECK(a.events.waitFor([&] { return a.events.updates.size() == 1; }));
}

TEST_CASE("a peer whose channel stops answering is declared failed within peerTimeout") {
  TestChannel a("a", livenessOptions());
  TestChannel b("b", livenessOptions());
  TestChannel c("c", livenessOptions());  // another peer of a's, which must be unaffected
  auto stall = std::make_shared<Stall>();
  const OpenOnExit openOnExit{stall};
  // b's channel thread blocks in its handler: it neither reads nor sends heartbeats.
  b.afterUpdate = [stall] { stall->stall(); };
  REQUIRE(a.channel->connect(b.address(), sampleMetadata("a"), deadlineIn(5s)).isOk());
  REQUIRE(c.channel->connect(a.address(), sampleMetadata("c"), deadlineIn(5s)).isOk());
  REQUIRE(a.channel->broadcastMetadata(sampleMetadata("a", 1)).isOk());
  REQUIRE(b.events.waitFor([&] { return !b.events.updates.empty(); }));
  REQUIRE(a.events.waitFor([&] { return !a.events.disconnects.empty(); }, kTimeout + 5s));
  const auto detected = kvx::Clock::now();
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(detected - stall->stalledAt());
  {
    std::lock_guard lock(a.events.mutex);
    REQUIRE(a.events.disconnects.size() == 1);
    const auto& [peer, why] = a.events.disconnects.front();
    CHECK(peer == "b");
    CHECK(why.code() == StatusCode::kPeerFailed);
    CHECK(why.message() == "no sign of life from 'b' for 0.3 s (peer timeout)");
  }
  INFO("detected " << took.count() << " ms after b's channel stalled");
  // b's last heartbeat may have gone out up to one interval before it stalled.
  CHECK(took >= kTimeout - kInterval - 10ms);
  CHECK(took <= kTimeout + kMargin);
  std::printf(
      "liveness: a silent peer declared failed %lld ms after it stalled (timeout %lld ms)\n",
      static_cast<long long>(took.count()), static_cast<long long>(kTimeout.count()));

  // c's link to a lives on, through more timeouts.
  std::this_thread::sleep_for(kTimeout * 3);
  CHECK(disconnectCount(c) == 0);
  {
    std::lock_guard lock(a.events.mutex);
    CHECK(a.events.disconnects.size() == 1);
  }
  // Once b runs again it finds the link closed: a broken connection, not a timeout of its own.
  stall->open();
  REQUIRE(b.events.waitFor([&] { return !b.events.disconnects.empty(); }));
  std::lock_guard lock(b.events.mutex);
  CHECK(b.events.disconnects.front().first == "a");
  CHECK(b.events.disconnects.front().second.code() == StatusCode::kPeerFailed);
}

TEST_CASE("a peer that announces a timeout is sent heartbeats, and dropped when silent") {
  TestChannel server("server", livenessOptions());
  RawClient raw(server.address());
  const auto start = kvx::Clock::now();
  raw.send(helloWithTimeout("raw", 100));
  auto ack = decodeMessage(raw.readFrame());
  REQUIRE(ack.isOk());
  REQUIRE(std::holds_alternative<HelloAck>(*ack));
  CHECK(std::get<HelloAck>(*ack).peerTimeoutMs == static_cast<std::uint64_t>(kTimeout.count()));
  std::vector<Frame> frames;
  REQUIRE(raw.readUntilClosed(&frames));
  const auto took = kvx::Clock::now() - start;
  // Heartbeats every min(75 ms, 100 ms / 2) = 50 ms, then a close without a goodbye.
  std::size_t heartbeats = 0;
  for (const Frame& frame : frames) {
    CHECK(frame.type == static_cast<std::uint16_t>(MessageType::kHeartbeat));
    heartbeats += frame.type == static_cast<std::uint16_t>(MessageType::kHeartbeat);
  }
  CHECK(heartbeats >= 3);
  CHECK(took >= kTimeout - 10ms);
  CHECK(took <= kTimeout + kMargin);
  REQUIRE(server.events.waitFor([&] { return !server.events.disconnects.empty(); }));
  std::lock_guard lock(server.events.mutex);
  CHECK(server.events.disconnects.front().first == "raw");
  CHECK(server.events.disconnects.front().second.message() ==
        "no sign of life from 'raw' for 0.3 s (peer timeout)");
}

TEST_CASE("any frame is a sign of life, not only heartbeats") {
  TestChannel server("server", livenessOptions());
  RawClient raw(server.address());
  raw.send(helloWithTimeout("raw", 1000));
  REQUIRE(std::holds_alternative<HelloAck>(*decodeMessage(raw.readFrame())));
  for (int i = 0; i < 10; ++i) {  // 1 s: more than three timeouts
    std::this_thread::sleep_for(100ms);
    raw.send(encodeMessage(MetadataUpdate{sampleMetadata("raw", i % 3)}));
  }
  CHECK(disconnectCount(server) == 0);
  CHECK(server.events.waitFor([&] { return server.events.updates.size() == 10; }));
}

TEST_CASE("a peer without heartbeats (an older kvx) is neither sent them nor timed out") {
  TestChannel server("server", livenessOptions());
  RawClient raw(server.address());
  raw.send(helloWithTimeout("old", std::nullopt));
  auto ack = decodeMessage(raw.readFrame());
  REQUIRE(ack.isOk());
  REQUIRE(std::holds_alternative<HelloAck>(*ack));
  // An older peer would ignore the unknown field in the ack, and would close the link on a
  // heartbeat (an unknown message type to it): none may come, and silence is not death.
  CHECK(raw.silentFor(kTimeout * 4));
  CHECK(disconnectCount(server) == 0);
  raw.send(encodeMessage(Goodbye{"done"}));
  REQUIRE(server.events.waitFor([&] { return !server.events.disconnects.empty(); }));
  std::lock_guard lock(server.events.mutex);
  CHECK(server.events.disconnects.front().second.code() == StatusCode::kCancelled);
}

TEST_CASE("a short peer timeout on one side makes the other send more often") {
  // a waits 2 s, b only 120 ms: a must send every 60 ms although its own interval is 1 s.
  TestChannel a("a", livenessOptions(2000ms, 1000ms));
  TestChannel b("b", livenessOptions(120ms, 40ms));
  REQUIRE(a.channel->connect(b.address(), sampleMetadata("a"), deadlineIn(5s)).isOk());
  std::this_thread::sleep_for(1s);
  CHECK(disconnectCount(a) == 0);
  CHECK(disconnectCount(b) == 0);
}

TEST_CASE("a channel that was stalled itself does not blame a peer that kept talking") {
  // a's thread stalls for twice its own timeout; b (patient) keeps sending heartbeats, which
  // wait unread in a's socket. Once a runs again they count as signs of life.
  TestChannel a("a", livenessOptions(kTimeout, kInterval));
  TestChannel b("b", livenessOptions(5000ms, 1000ms));
  auto stall = std::make_shared<Stall>();
  const OpenOnExit openOnExit{stall};
  a.afterUpdate = [stall] { stall->stall(); };
  REQUIRE(a.channel->connect(b.address(), sampleMetadata("a"), deadlineIn(5s)).isOk());
  REQUIRE(b.channel->broadcastMetadata(sampleMetadata("b", 1)).isOk());
  REQUIRE(a.events.waitFor([&] { return !a.events.updates.empty(); }));
  std::this_thread::sleep_for(kTimeout * 2);
  stall->open();
  std::this_thread::sleep_for(kTimeout * 2);
  CHECK(disconnectCount(a) == 0);
  CHECK(disconnectCount(b) == 0);
}
