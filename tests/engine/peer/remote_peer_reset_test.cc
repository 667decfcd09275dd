// kvx-test-labels: unit
// RemotePeer::resetLink, against a scripted transport whose endpoints hold every operation
// until they are closed: notifications that our own reset cancelled go out again on the new
// link (once, in send order, their senders told that they did), staging messages and
// everything a peer failure cancels still fail, and the old endpoint's close is bounded by
// the deadline the reset was given and comes before the new endpoint opens, during which new
// work waits for the new link.
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/notify/notification_header.h"
#include "engine/peer/remote_peer.h"
#include "tests/support/memoryless_transport.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

struct Sent {
  std::vector<std::uint8_t> header;
  std::string payload;
};

// Holds every message until close, which fails them (newest first, as a transport may).
class HoldingEndpoint final : public Endpoint {
 public:
  Result<std::unique_ptr<RemoteKey>> unpackRemoteKey(std::span<const std::uint8_t>,
                                                     MemoryKind) override {
    return std::unique_ptr<RemoteKey>(new RemoteKey());
  }
  void put(const RmaOp&, Completion* completion) override { held_.push_back(completion); }
  void get(const RmaOp&, Completion* completion) override { held_.push_back(completion); }
  void flush(Completion* completion) override { held_.push_back(completion); }
  void sendMessage(std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload,
                   Completion* completion) override {
    if (closed) return completion->onComplete(failedPrecondition("closed"));
    sent.push_back({{header.begin(), header.end()}, {payload.begin(), payload.end()}});
    if (holdMessages) {
      held_.push_back(completion);
    } else {
      completion->onComplete(Status::ok());
    }
  }
  void close(bool force) override {
    closed = true;
    forced = forced || force;
    while (!held_.empty()) {
      Completion* completion = held_.back();
      held_.pop_back();
      completion->onComplete(cancelled("closed with the operation in flight"));
    }
  }
  void forceClose(std::chrono::steady_clock::time_point deadline) override {
    closeDeadline = deadline;
    close(true);
  }
  bool failed() const override { return false; }
  std::string description() const override { return "holding"; }

  bool holdMessages = true;
  bool closed = false;
  bool forced = false;
  std::optional<std::chrono::steady_clock::time_point> closeDeadline;
  std::vector<Sent> sent;

 private:
  std::vector<Completion*> held_;
};

class HoldingTransport final : public test::MemorylessTransport {
 public:
  std::string_view name() const override { return "holding"; }
  Result<std::shared_ptr<Endpoint>> connect(std::span<const std::uint8_t>,
                                            EndpointErrorHandler) override {
    if (onConnect && !endpoints.empty()) onConnect();
    auto endpoint = std::make_shared<HoldingEndpoint>();
    endpoints.push_back(endpoint);
    return std::shared_ptr<Endpoint>(endpoint);
  }

  std::vector<std::shared_ptr<HoldingEndpoint>> endpoints;
  std::function<void()> onConnect;  // runs as a reset opens its endpoint, before it exists
};

// A sender's completion that owns its bytes, as the engine's do.
struct Message final : Completion {
  Message(std::vector<std::uint8_t> h, std::string p)
      : header(std::move(h)), payload(std::move(p)) {}
  std::vector<std::uint8_t> header;
  std::string payload;
  std::vector<Status> ends;
  void onComplete(Status status) override { ends.push_back(std::move(status)); }
  std::span<const std::uint8_t> bytes() const {
    return {reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()};
  }
};

std::shared_ptr<RemotePeer> connectPeer(HoldingTransport& transport,
                                        Clock::duration reopenWait = RemotePeer::kReopenWait) {
  PeerMetadata metadata;
  metadata.name = "decode";
  metadata.incarnation = 7;
  metadata.transport = "holding";
  metadata.dataAddress = {2};
  auto peer = RemotePeer::connect(transport, metadata, nullptr, reopenWait);
  REQUIRE(peer.isOk());
  REQUIRE(transport.endpoints.size() == 1);
  return *peer;
}

void send(RemotePeer& peer, Message& message) {
  auto link = peer.link();
  REQUIRE(link.isOk());
  (*link)->endpoint().sendMessage(message.header, message.bytes(), &message);
}

}  // namespace

TEST_CASE("notifications a reset of our own cancelled go out again on the new link", "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport);
  Message abort(encodeNotificationHeader("prefill"), "abort r1");
  Message data(encodeNotificationHeader("prefill"), "data r2");
  Message staging(encodeMessageHeader(MessageKind::kStagingRequest, "prefill"), "slot please");
  send(*peer, abort);
  send(*peer, staging);
  send(*peer, data);
  REQUIRE(abort.ends.empty());

  const Deadline bound = Clock::now() + 200ms;
  REQUIRE(peer->resetLink("a cancel", bound).isOk());

  REQUIRE(transport.endpoints.size() == 2);
  const HoldingEndpoint& old = *transport.endpoints[0];
  const HoldingEndpoint& fresh = *transport.endpoints[1];
  CHECK(old.forced);
  REQUIRE(old.closeDeadline.has_value());
  CHECK(*old.closeDeadline == bound);
  // The two notifications, once each and in the order they were first sent (the old
  // endpoint failed them newest first); the staging message is its sender's to repeat.
  REQUIRE(fresh.sent.size() == 2);
  CHECK(fresh.sent[0].payload == "abort r1");
  CHECK(fresh.sent[1].payload == "data r2");
  CHECK(fresh.sent[0].header == abort.header);
  REQUIRE(abort.ends.size() == 1);
  CHECK(abort.ends[0].isOk());
  REQUIRE(data.ends.size() == 1);
  CHECK(data.ends[0].isOk());
  REQUIRE(staging.ends.size() == 1);
  CHECK(staging.ends[0].code() == StatusCode::kCancelled);

  // Messages sent after the reset use the new link and are not tracked by the old one.
  Message later(encodeNotificationHeader("prefill"), "ready r3");
  send(*peer, later);
  CHECK(transport.endpoints[1]->sent.size() == 3);
  peer->fail(peerFailed("test over"));
  REQUIRE(later.ends.size() == 1);
  CHECK(later.ends[0].code() == StatusCode::kCancelled);  // a failure is not resent
  CHECK(transport.endpoints.size() == 2);
}

TEST_CASE("a peer failure fails notifications in flight without resending them", "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport);
  Message abort(encodeNotificationHeader("prefill"), "abort r1");
  send(*peer, abort);
  peer->fail(peerFailed("the peer died"));
  REQUIRE(abort.ends.size() == 1);
  CHECK_FALSE(abort.ends[0].isOk());
  CHECK(transport.endpoints.size() == 1);
  CHECK(transport.endpoints[0]->sent.size() == 1);
}

TEST_CASE("a message a reset cancels twice is sent on each new link", "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport);
  Message abort(encodeNotificationHeader("prefill"), "abort r1");
  send(*peer, abort);
  REQUIRE(peer->resetLink("first", Clock::now() + 200ms).isOk());
  REQUIRE(abort.ends.size() == 1);  // the sender heard once, from the first resend
  // The resend is held on the second link too; a second reset carries it to a third.
  REQUIRE(peer->resetLink("second", Clock::now() + 200ms).isOk());
  REQUIRE(transport.endpoints.size() == 3);
  CHECK(transport.endpoints[1]->sent.size() == 1);
  REQUIRE(transport.endpoints[2]->sent.size() == 1);
  CHECK(transport.endpoints[2]->sent[0].payload == "abort r1");
  CHECK(abort.ends.size() == 1);
  peer->fail(peerFailed("test over"));
}

TEST_CASE("a reset closes the old link before it opens the next; new work waits for the next",
          "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport);
  Message data(encodeNotificationHeader("prefill"), "data r1");
  send(*peer, data);
  bool oldClosedFirst = false;
  std::optional<Status> linkDuringOpen;
  std::atomic<bool> awaitReturned{false};
  bool returnedDuringOpen = true;
  std::optional<Result<std::shared_ptr<PeerLink>>> awaited;
  std::thread starter;
  transport.onConnect = [&] {
    // What a reset failed is already failed when the slow part, the open, begins.
    oldClosedFirst = transport.endpoints[0]->closed;
    linkDuringOpen = peer->link().status();
    starter = std::thread([&] {
      awaited = peer->awaitLink();  // a transfer started during the reset
      awaitReturned = true;
    });
    std::this_thread::sleep_for(100ms);  // an endpoint that takes its time to open
    returnedDuringOpen = awaitReturned.load();
  };
  REQUIRE(peer->resetLink("a cancel", Clock::now() + 200ms).isOk());
  starter.join();
  CHECK(oldClosedFirst);
  REQUIRE(linkDuringOpen.has_value());
  CHECK(linkDuringOpen->code() == StatusCode::kTransportError);
  CHECK_THAT(linkDuringOpen->message(), Catch::Contains("being reopened"));
  CHECK_FALSE(returnedDuringOpen);
  REQUIRE(awaited.has_value());
  REQUIRE(awaited->isOk());
  REQUIRE(transport.endpoints.size() == 2);
  // The notification the close cancelled went out again on the new link, and the waiter's
  // link is that one.
  REQUIRE(transport.endpoints[1]->sent.size() == 1);
  CHECK(transport.endpoints[1]->sent[0].payload == "data r1");
  Message later(encodeNotificationHeader("prefill"), "ready r2");
  (**awaited)->endpoint().sendMessage(later.header, later.bytes(), &later);
  REQUIRE(transport.endpoints[1]->sent.size() == 2);
  CHECK(transport.endpoints[1]->sent[1].payload == "ready r2");
  peer->fail(peerFailed("test over"));
}

TEST_CASE("awaitLink waits the peer's reopen wait for a reset's link, then times out", "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport, 300ms);
  REQUIRE(peer->beginReset("a cancel", Clock::now() + 200ms));

  // Nothing opens the next link: the wait ends at the peer's bound, not kReopenWait's.
  const auto started = Clock::now();
  const auto timedOutLink = peer->awaitLink();
  const auto waited = Clock::now() - started;
  REQUIRE_FALSE(timedOutLink.isOk());
  CHECK(timedOutLink.status().code() == StatusCode::kTimedOut);
  CHECK_THAT(timedOutLink.status().message(), Catch::Contains("within 300 ms"));
  CHECK(waited >= 300ms);
  CHECK(waited < RemotePeer::kReopenWait);

  // A link that opens within the bound is what the waiter gets.
  std::optional<Result<std::shared_ptr<PeerLink>>> awaited;
  std::thread waiter([&] { awaited = peer->awaitLink(); });
  std::this_thread::sleep_for(100ms);
  REQUIRE(peer->finishReset().isOk());
  waiter.join();
  REQUIRE(awaited.has_value());
  REQUIRE(awaited->isOk());
  CHECK((**awaited)->epoch() == 2);  // the link the reset opened
  CHECK(transport.endpoints.size() == 2);
  peer->fail(peerFailed("test over"));
}

TEST_CASE("a peer that fails while a reset opens its next link keeps no link", "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport);
  transport.onConnect = [&] { peer->fail(peerFailed("the peer died during the reset")); };
  const Status reset = peer->resetLink("a cancel", Clock::now() + 200ms);
  CHECK(reset.code() == StatusCode::kPeerFailed);
  REQUIRE(transport.endpoints.size() == 2);
  CHECK(transport.endpoints[1]->closed);  // opened too late: closed at once
  auto link = peer->awaitLink();
  REQUIRE_FALSE(link.isOk());
  CHECK_THAT(link.status().message(), Catch::Contains("died during the reset"));
}

TEST_CASE("linkWhenReady defers a caller during a reset and calls it back once the link is open",
          "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport);
  // Outside a reset: the current link at once, and the callback is dropped.
  int earlyCalls = 0;
  auto now = peer->linkWhenReady([&] { ++earlyCalls; });
  REQUIRE(now.isOk());
  REQUIRE(*now != nullptr);
  const std::shared_ptr<PeerLink> first = *now;
  CHECK_FALSE(first->wasReset());

  std::optional<Result<std::shared_ptr<PeerLink>>> during;
  int calls = 0;
  bool calledDuringOpen = false;
  transport.onConnect = [&] {
    during = peer->linkWhenReady([&] { ++calls; });
    std::this_thread::sleep_for(20ms);
    calledDuringOpen = calls != 0;
  };
  REQUIRE(peer->resetLink("a cancel of transfer(s) 7", Clock::now() + 200ms).isOk());
  REQUIRE(during.has_value());
  REQUIRE(during->isOk());
  CHECK(**during == nullptr);  // deferred
  CHECK_FALSE(calledDuringOpen);
  CHECK(calls == 1);  // once the reset opened the next link
  CHECK(earlyCalls == 0);
  // The old link says it was reset, and why.
  CHECK(first->wasReset());
  CHECK(first->resetReason() == "a cancel of transfer(s) 7");
  auto next = peer->linkWhenReady([] {});
  REQUIRE(next.isOk());
  CHECK(*next != first);
  CHECK_FALSE((*next)->wasReset());

  // A peer that fails during a reset: the deferred caller is called back and finds the failure.
  transport.onConnect = [&] {
    during = peer->linkWhenReady([&] { ++calls; });
    peer->fail(peerFailed("gone during the reset"));
  };
  CHECK(peer->resetLink("another cancel", Clock::now() + 200ms).code() == StatusCode::kPeerFailed);
  CHECK(calls == 2);
  auto after = peer->linkWhenReady([&] { ++calls; });
  CHECK(after.status().code() == StatusCode::kPeerFailed);
  CHECK(calls == 2);
}

TEST_CASE("a notification sent while a reset opens the link waits for the link, not the sender",
          "[peer]") {
  HoldingTransport transport;
  auto peer = connectPeer(transport);
  Message data(encodeNotificationHeader("prefill"), "data r1");
  send(*peer, data);  // in flight on the old link: the reset cancels it and sends it again
  const std::string text = "abort r2";
  std::optional<Status> sentDuringOpen;
  std::size_t sentOnOldLink = 0;
  transport.onConnect = [&] {
    sentDuringOpen = peer->sendOwned(encodeNotificationHeader("prefill"),
                                     {text.begin(), text.end()}, "notification to 'decode'");
    sentOnOldLink = transport.endpoints[0]->sent.size();
  };
  REQUIRE(peer->resetLink("a cancel", Clock::now() + 200ms).isOk());
  REQUIRE(sentDuringOpen.has_value());
  CHECK(sentDuringOpen->isOk());  // accepted at once, although no link was open
  CHECK(sentOnOldLink == 1);      // only "data r1" ever went out on the old link
  // On the new link: what the reset cancelled first, then what waited, in order.
  REQUIRE(transport.endpoints.size() == 2);
  REQUIRE(transport.endpoints[1]->sent.size() == 2);
  CHECK(transport.endpoints[1]->sent[0].payload == "data r1");
  CHECK(transport.endpoints[1]->sent[1].payload == "abort r2");
  // Outside a reset it goes straight out.
  const std::string later = "ready r3";
  CHECK(peer->sendOwned(encodeNotificationHeader("prefill"), {later.begin(), later.end()}, "n")
            .isOk());
  REQUIRE(transport.endpoints[1]->sent.size() == 3);
  CHECK(transport.endpoints[1]->sent[2].payload == "ready r3");
  peer->fail(peerFailed("test over"));
  CHECK(peer->sendOwned(encodeNotificationHeader("prefill"), {}, "n").code() ==
        StatusCode::kPeerFailed);
}
