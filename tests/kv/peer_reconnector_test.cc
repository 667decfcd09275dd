// kvx-test-labels: unit
// PeerReconnector dials a lost peer again with a growing delay until it is back, stops for
// peers that came back by other means, ignores peers it was never told about, and refuses
// an agent of another name at the lost peer's address.
#include "kv/peer_reconnector.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>
#include <vector>

using namespace kvx;
using namespace kvx::kv;
using namespace std::chrono_literals;

namespace {

ReconnectPolicy fastPolicy() {
  ReconnectPolicy policy;
  policy.firstDelay = 5ms;
  policy.maxDelay = 40ms;
  policy.attemptTimeout = 500ms;
  return policy;
}

// A peer that answers once `upAfter` attempts have failed, under the name `answersAs`.
struct FakePeer {
  std::mutex mutex;
  std::vector<Clock::time_point> calls;
  std::vector<std::string> addresses;
  int upAfter = 0;
  std::string answersAs = "decode";
  std::atomic<bool> connected{false};

  Result<std::string> connect(const std::string& address, Deadline) {
    std::lock_guard lock(mutex);
    calls.push_back(Clock::now());
    addresses.push_back(address);
    if (static_cast<int>(calls.size()) <= upAfter) return peerFailed("connection refused");
    if (answersAs == "decode") connected = true;
    return answersAs;
  }
  std::size_t callCount() {
    std::lock_guard lock(mutex);
    return calls.size();
  }
};

PeerReconnector makeReconnector(FakePeer& peer) {
  return PeerReconnector(
      "test", fastPolicy(),
      [&peer](const std::string& address, Deadline deadline) {
        return peer.connect(address, deadline);
      },
      [&peer](const std::string&) { return peer.connected.load(); });
}

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = 3s) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return done();
}

}  // namespace

TEST_CASE("a lost peer is dialed until it answers, with growing delays", "[reconnect]") {
  FakePeer peer;
  peer.upAfter = 4;
  PeerReconnector reconnector(
      "test", fastPolicy(),
      [&peer](const std::string& address, Deadline deadline) {
        return peer.connect(address, deadline);
      },
      [&peer](const std::string&) { return peer.connected.load(); });
  reconnector.watch("decode", "10.0.0.1:1");
  reconnector.watch("decode", "10.0.0.2:2");  // the latest address wins
  reconnector.lost("decode");
  REQUIRE(waitFor([&] { return peer.connected.load(); }));
  std::this_thread::sleep_for(100ms);  // no further attempt once it is back
  REQUIRE(peer.callCount() == 5);
  CHECK(reconnector.attempts() == 5);
  std::lock_guard lock(peer.mutex);
  for (const std::string& address : peer.addresses) CHECK(address == "10.0.0.2:2");
  // 5, 10, 20, 40, 40 ms apart (at least): the delay doubles up to maxDelay.
  CHECK(peer.calls[2] - peer.calls[1] >= 19ms);
  CHECK(peer.calls[4] - peer.calls[3] >= 39ms);
}

TEST_CASE("peers never watched, already back, or of another name are handled", "[reconnect]") {
  SECTION("a peer it was never told about is not dialed") {
    FakePeer peer;
    auto reconnector = makeReconnector(peer);
    reconnector.lost("stranger");
    std::this_thread::sleep_for(60ms);
    CHECK(peer.callCount() == 0);
  }
  SECTION("a peer that came back by other means is not dialed") {
    FakePeer peer;
    auto reconnector = makeReconnector(peer);
    reconnector.watch("decode", "10.0.0.1:1");
    peer.connected = true;
    reconnector.lost("decode");
    REQUIRE(waitFor([&] { return reconnector.attempts() == 1; }));
    std::this_thread::sleep_for(60ms);
    CHECK(peer.callCount() == 0);
    CHECK(reconnector.attempts() == 1);  // one look, no connect
  }
  SECTION("another agent at the address is not taken for the lost peer") {
    FakePeer peer;
    peer.answersAs = "intruder";
    auto reconnector = makeReconnector(peer);
    reconnector.watch("decode", "10.0.0.1:1");
    reconnector.lost("decode");
    REQUIRE(waitFor([&] { return peer.callCount() >= 3; }));
    CHECK_FALSE(peer.connected.load());
  }
  SECTION("stop ends the dialing") {
    FakePeer peer;
    peer.upAfter = 1000000;
    auto reconnector = makeReconnector(peer);
    reconnector.watch("decode", "10.0.0.1:1");
    reconnector.lost("decode");
    REQUIRE(waitFor([&] { return peer.callCount() >= 2; }));
    reconnector.stop();
    std::this_thread::sleep_for(20ms);
    const std::size_t calls = peer.callCount();
    std::this_thread::sleep_for(100ms);
    CHECK(peer.callCount() == calls);
  }
}
