// kvx-test-labels: unit
// Agent::setPeerEventHandler: joins and departures with the peer's incarnation, including a
// restart under the same name, which a poll of peers() cannot see.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/agent_impl.h"
#include "kvx/agent.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace std::chrono_literals;

namespace {

// Collects the events an agent hands out; waits for them with a deadline.
class EventLog {
 public:
  void attach(Agent& agent) {
    agent.setPeerEventHandler([this](const PeerEvent& event) {
      std::lock_guard lock(mutex_);
      events_.push_back(event);
      changed_.notify_all();
    });
  }
  // The first `count` events, once there are that many (fails the test after 5 s).
  std::vector<PeerEvent> waitFor(std::size_t count) {
    std::unique_lock lock(mutex_);
    const bool arrived = changed_.wait_for(lock, 5s, [&] { return events_.size() >= count; });
    INFO("events seen: " << events_.size());
    REQUIRE(arrived);
    return {events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(count)};
  }
  std::size_t size() {
    std::lock_guard lock(mutex_);
    return events_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<PeerEvent> events_;
};

}  // namespace

TEST_CASE("peers joining and leaving are reported with their incarnation", "[agent]") {
  const std::string transport = GENERATE("inproc", "tcp");
  // The logs outlive the agents: an agent hands out events (the other one leaving) until it
  // is destroyed.
  EventLog listenerEvents;
  EventLog clientEvents;
  auto listener = test::makeAgent("listener", transport);
  auto client = test::makeAgent("client", transport);
  listenerEvents.attach(*listener);
  clientEvents.attach(*client);

  REQUIRE(client->connect(listener->listenAddress()).isOk());
  auto joinedAtClient = clientEvents.waitFor(1);
  CHECK(joinedAtClient[0].kind == PeerEvent::Kind::kJoined);
  CHECK(joinedAtClient[0].peer == "listener");
  CHECK(joinedAtClient[0].why.isOk());
  CHECK(joinedAtClient[0].incarnation == client->peerInfo("listener")->incarnation);
  auto joinedAtListener = listenerEvents.waitFor(1);
  CHECK(joinedAtListener[0].kind == PeerEvent::Kind::kJoined);
  CHECK(joinedAtListener[0].peer == "client");
  const std::uint64_t clientIncarnation = listener->peerInfo("client")->incarnation;
  CHECK(joinedAtListener[0].incarnation == clientIncarnation);
  CHECK(clientIncarnation != 0);

  SECTION("a local disconnect is a departure with CANCELLED, the peer's is PEER_FAILED") {
    REQUIRE(client->disconnect("listener").isOk());
    auto left = clientEvents.waitFor(2);
    CHECK(left[1].kind == PeerEvent::Kind::kLeft);
    CHECK(left[1].why.code() == StatusCode::kCancelled);
    auto leftAtListener = listenerEvents.waitFor(2);
    CHECK(leftAtListener[1].kind == PeerEvent::Kind::kLeft);
    CHECK(leftAtListener[1].peer == "client");
    CHECK(leftAtListener[1].incarnation == clientIncarnation);
    CHECK(leftAtListener[1].why.code() == StatusCode::kPeerFailed);
  }

  SECTION("a restart under the same name: the old incarnation leaves, then the new one joins") {
    // The replacement connects while the old client is still up, so the name never drops
    // out of peers(): only the incarnation tells the two apart.
    auto restarted = test::makeAgent("client", transport);
    REQUIRE(restarted->connect(listener->listenAddress()).isOk());
    auto events = listenerEvents.waitFor(3);
    CHECK(events[1].kind == PeerEvent::Kind::kLeft);
    CHECK(events[1].incarnation == clientIncarnation);
    CHECK(events[1].why.code() == StatusCode::kPeerFailed);
    CHECK_THAT(events[1].why.message(), Catch::Contains("restarted"));
    CHECK(events[2].kind == PeerEvent::Kind::kJoined);
    CHECK(events[2].incarnation != clientIncarnation);
    CHECK(events[2].incarnation == listener->peerInfo("client")->incarnation);
    // Metadata the old incarnation sends later is stale: refused, the new one stays.
    const std::size_t regionsBefore = listener->peerInfo("client")->regions.size();
    AllocationSpec spec;
    spec.name = "late";
    spec.length = 4096;
    REQUIRE(client->allocateMemory(spec).isOk());
    std::this_thread::sleep_for(100ms);
    CHECK(listener->peerInfo("client")->incarnation == events[2].incarnation);
    CHECK(listener->peerInfo("client")->regions.size() == regionsBefore);
    // The old client's link closing later is not a departure of the new one.
    client.reset();
    std::this_thread::sleep_for(100ms);
    CHECK(listenerEvents.size() == 3);
    CHECK(listener->peerInfo("client").isOk());
  }

  SECTION("a second connect of a peer that keeps its session changes nothing") {
    REQUIRE(client->connect(listener->listenAddress()).isOk());
    std::this_thread::sleep_for(100ms);
    CHECK(listenerEvents.size() == 1);
    CHECK(clientEvents.size() == 1);
  }

  SECTION("no events after the handler is cleared") {
    listener->setPeerEventHandler(nullptr);
    client.reset();
    std::this_thread::sleep_for(100ms);
    CHECK(listenerEvents.size() == 1);
  }
}

// A peer that drops this agent and connects again before this agent sees anything close.
// On the in-process transport closing a data path tells the other side nothing, so that the
// handshake alone must tell; over tcp the other side may hear of it from its own data path
// first (then it leaves the ordinary way, which the loss tests cover).
TEST_CASE("a peer that dropped this agent and connects again leaves and joins again first",
          "[agent]") {
  EventLog listenerEvents;
  EventLog clientEvents;
  auto listener = test::makeAgent("listener", "inproc");
  auto client = test::makeAgent("client", "inproc");
  listenerEvents.attach(*listener);
  clientEvents.attach(*client);
  REQUIRE(client->connect(listener->listenAddress()).isOk());
  REQUIRE(clientEvents.waitFor(1)[0].kind == PeerEvent::Kind::kJoined);
  REQUIRE(listenerEvents.waitFor(1)[0].kind == PeerEvent::Kind::kJoined);
  const std::uint64_t clientIncarnation = listener->peerInfo("client")->incarnation;

  SECTION("a peer that dropped this agent and connects again: it leaves and joins again") {
    // The client forgets the listener (as after its data path failed) while its control
    // link stays up, so the listener sees nothing close: the new handshake must tell it.
    REQUIRE(agent::engineOf(*client)
                .removePeer("listener", peerFailed("the data path failed (test)"))
                .isOk());
    REQUIRE(client->connect(listener->listenAddress()).isOk());
    // Before connect returned: whatever the client sends next meets the new session.
    REQUIRE(listenerEvents.size() == 3);
    auto events = listenerEvents.waitFor(3);
    CHECK(events[1].kind == PeerEvent::Kind::kLeft);
    CHECK(events[1].incarnation == clientIncarnation);
    CHECK(events[1].why.code() == StatusCode::kPeerFailed);
    CHECK_THAT(events[1].why.message(), Catch::Contains("without the state of its session"));
    CHECK(events[2].kind == PeerEvent::Kind::kJoined);
    CHECK(events[2].incarnation == clientIncarnation);
    auto atClient = clientEvents.waitFor(3);
    CHECK(atClient[1].kind == PeerEvent::Kind::kLeft);
    CHECK(atClient[2].kind == PeerEvent::Kind::kJoined);
    // The data path works both ways in the new session.
    REQUIRE(client->sendNotification("listener", "to listener").isOk());
    CHECK(listener->waitNotification(deadlineIn(5s))->payload == "to listener");
    REQUIRE(listener->sendNotification("client", "to client").isOk());
    CHECK(client->waitNotification(deadlineIn(5s))->payload == "to client");
  }

  SECTION("a peer that no longer knows this agent: this agent starts over when it connects") {
    REQUIRE(agent::engineOf(*listener)
                .removePeer("client", peerFailed("the data path failed (test)"))
                .isOk());
    REQUIRE(listenerEvents.waitFor(2)[1].kind == PeerEvent::Kind::kLeft);
    REQUIRE(client->connect(listener->listenAddress()).isOk());
    REQUIRE(clientEvents.size() == 3);
    auto atClient = clientEvents.waitFor(3);
    CHECK(atClient[1].kind == PeerEvent::Kind::kLeft);
    CHECK_THAT(atClient[1].why.message(), Catch::Contains("no longer knew this agent"));
    CHECK(atClient[2].kind == PeerEvent::Kind::kJoined);
    CHECK(listenerEvents.waitFor(3)[2].kind == PeerEvent::Kind::kJoined);
    REQUIRE(client->sendNotification("listener", "again").isOk());
    CHECK(listener->waitNotification(deadlineIn(5s))->payload == "again");
  }
}
