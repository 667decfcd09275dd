// kvx-test-labels: unit
// PeerDirectory on its own, over the in-process transport: which metadata it takes, the
// events of joins, restarts and departures, and the order a removal keeps (the peer's
// transfers failed and its link closed while it is listed; then unlisted; then the event).
#include "engine/peer/peer_directory.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/support/inproc_peer.h"

using namespace kvx;
using namespace kvx::engine;

namespace {

using test::inprocTransport;
using test::peerMetadata;

// A directory on its own transport that records what its hooks and handler saw, in order.
struct Recorded {
  std::unique_ptr<Transport> transport = inprocTransport("self");
  std::vector<std::string> log;
  std::unique_ptr<PeerDirectory> directory;

  Recorded() {
    PeerDirectory::Hooks hooks;
    hooks.failTransfers = [this](const RemotePeer& peer, const Status& why) {
      // The peer is still listed and its link not yet closed.
      const bool listed = directory->find(peer.name()).isOk();
      const bool linked = peer.link().isOk();
      log.push_back("failTransfers " + peer.name() + (listed ? " listed" : " unlisted") +
                    (linked ? " linked" : " closed") + " " + std::string(toString(why.code())));
    };
    hooks.unlisted = [this](const std::string& peer) {
      log.push_back("unlisted " + peer + (directory->find(peer).isOk() ? " listed" : " gone"));
    };
    hooks.describe = [](const std::string& peer) -> Result<std::string> {
      return "path to " + peer;
    };
    directory = std::make_unique<PeerDirectory>("self", *transport, ReopenGate{}, hooks);
    directory->setEventHandler([this](const PeerEvent& event) {
      log.push_back(std::string(event.kind == PeerEvent::Kind::kJoined ? "joined " : "left ") +
                    event.peer + " " + std::to_string(event.incarnation));
    });
  }

  ~Recorded() {
    directory->failAll(cancelled("test over"));
    directory->clear();
  }
};

}  // namespace

TEST_CASE("a peer directory refuses its own name and another transport", "[engine][peer]") {
  auto other = inprocTransport("b");
  Recorded r;
  PeerMetadata self = peerMetadata("self", 1, *other);
  CHECK(r.directory->addOrUpdate(self).code() == StatusCode::kInvalidArgument);
  PeerMetadata foreign = peerMetadata("b", 1, *other);
  foreign.transport = "ucx";
  const Status refused = r.directory->addOrUpdate(foreign);
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.message(), Catch::Contains("'ucx'") && Catch::Contains("'inproc'"));
  CHECK(r.directory->names().empty());
  CHECK(r.log.empty());
}

TEST_CASE("a peer directory announces a join once per incarnation", "[engine][peer]") {
  auto b = inprocTransport("b");  // outlives the directory's link to it
  Recorded r;
  REQUIRE(r.directory->addOrUpdate(peerMetadata("b", 7, *b)).isOk());
  REQUIRE(r.directory->addOrUpdate(peerMetadata("b", 7, *b)).isOk());  // an update, no event
  CHECK(r.directory->names() == std::vector<std::string>{"b"});
  CHECK(r.directory->find("b").value()->incarnation() == 7);
  CHECK(r.log == std::vector<std::string>{"joined b 7"});

  SECTION("updates of another incarnation are stale, of an unknown peer not found") {
    CHECK(r.directory->update(peerMetadata("b", 8, *b)).code() == StatusCode::kFailedPrecondition);
    CHECK(r.directory->update(peerMetadata("c", 1, *b)).code() == StatusCode::kNotFound);
    CHECK(r.directory->update(peerMetadata("b", 7, *b)).isOk());
  }
  SECTION("a restart is the old incarnation's departure, then the new one's join") {
    REQUIRE(r.directory->addOrUpdate(peerMetadata("b", 8, *b)).isOk());
    CHECK(r.log == std::vector<std::string>{"joined b 7",
                                            "failTransfers b listed linked PEER_FAILED",
                                            "unlisted b gone", "left b 7", "joined b 8"});
    CHECK(r.directory->find("b").value()->incarnation() == 8);
  }
}

TEST_CASE("a peer directory removes a peer in the order its users rely on", "[engine][peer]") {
  auto b = inprocTransport("b");  // outlives the directory's link to it
  Recorded r;
  REQUIRE(r.directory->addOrUpdate(peerMetadata("b", 3, *b)).isOk());
  auto peer = r.directory->find("b").value();
  REQUIRE(r.directory->remove("b", cancelled("removed by the test")).isOk());
  CHECK(r.log == std::vector<std::string>{"joined b 3", "failTransfers b listed linked CANCELLED",
                                          "unlisted b gone", "left b 3"});
  CHECK(peer->failure().code() == StatusCode::kCancelled);  // its link closed
  CHECK(r.directory->find("b").status().code() == StatusCode::kNotFound);
  CHECK(r.directory->remove("b", cancelled("again")).code() == StatusCode::kNotFound);
}

TEST_CASE("a peer directory's shutdown fails every peer before dropping them", "[engine][peer]") {
  auto b = inprocTransport("b");
  auto c = inprocTransport("c");
  Recorded r;
  REQUIRE(r.directory->addOrUpdate(peerMetadata("b", 1, *b)).isOk());
  REQUIRE(r.directory->addOrUpdate(peerMetadata("c", 1, *c)).isOk());
  auto peerB = r.directory->find("b").value();
  r.directory->failAll(cancelled("shutting down"));
  CHECK(peerB->failure().code() == StatusCode::kCancelled);
  CHECK(r.directory->names().size() == 2);  // listed until clear()
  r.directory->clear();
  CHECK(r.directory->names().empty());
  CHECK(r.log.size() == 2);  // the joins: a shutdown sends no departures
}
