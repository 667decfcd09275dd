// kvx-test-labels: unit
// NotificationRouter on its own, over the in-process transport: where each received message
// goes (inbox, handler, staging sink, or dropped), the caller-driven wait, and sending.
#include "engine/notify/notification_router.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "tests/support/inproc_peer.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

std::vector<std::uint8_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

// A router on transport "a", driven by its caller, with a peer "b" it can send to.
struct Routed {
  std::unique_ptr<Transport> b = test::inprocTransport("b");
  std::unique_ptr<Transport> a = test::inprocTransport("a");
  PeerDirectory peers{"a", *a, ReopenGate{}, PeerDirectory::Hooks{}};
  std::vector<MessageKind> staged;  // what reached the staging sink
  int steps = 0;
  std::unique_ptr<NotificationRouter> router;

  Routed() {
    ProgressHooks progress;
    progress.kick = [] {};
    progress.step = [this] {
      ++steps;
      return a->progress();
    };
    router = std::make_unique<NotificationRouter>(
        "a", peers,
        [this](const MessageHeader& header, std::span<const std::uint8_t>) {
          staged.push_back(header.kind);
        },
        progress);
    a->setMessageHandler(
        [this](std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload) {
          router->onMessage(header, payload);
        });
  }

  ~Routed() {
    peers.failAll(cancelled("test over"));
    peers.clear();
  }

  void receive(const std::vector<std::uint8_t>& header, const std::string& payload) {
    const std::vector<std::uint8_t> body = bytes(payload);
    router->onMessage(header, body);
  }
};

}  // namespace

TEST_CASE("a notification router queues notifications and passes staging messages on",
          "[engine][notify]") {
  Routed r;
  r.receive(encodeNotificationHeader("b"), "first");
  r.receive(encodeMessageHeader(MessageKind::kStagingRequest, "b"), "request");
  r.receive(encodeMessageHeader(MessageKind::kStagingReply, "b"), "reply");
  r.receive(bytes("not a header"), "dropped");
  CHECK(r.staged ==
        std::vector<MessageKind>{MessageKind::kStagingRequest, MessageKind::kStagingReply});
  CHECK(r.router->inbox().size() == 1);
  CHECK_FALSE(r.router->deliver());  // no handler: they stay queued

  auto first = r.router->wait(Clock::now() + 1s);
  REQUIRE(first.isOk());
  CHECK(first->peer == "b");
  CHECK(first->payload == "first");

  // Nothing left: a caller-driven wait makes progress itself until its deadline.
  auto none = r.router->wait(Clock::now() + 20ms);
  CHECK(none.status().code() == StatusCode::kTimedOut);
  CHECK(r.steps > 0);
}

TEST_CASE("a notification router hands notifications to its handler while one is set",
          "[engine][notify]") {
  Routed r;
  std::vector<std::string> handled;
  r.receive(encodeNotificationHeader("b"), "queued before");
  r.router->setHandler([&](Notification n) { handled.push_back(n.peer + ":" + n.payload); });
  r.receive(encodeNotificationHeader("b"), "after");
  CHECK(r.router->deliver());
  CHECK(handled == std::vector<std::string>{"b:queued before", "b:after"});
  CHECK_FALSE(r.router->deliver());

  r.router->setHandler(nullptr);
  r.receive(encodeNotificationHeader("b"), "queued again");
  CHECK_FALSE(r.router->deliver());
  CHECK(r.router->inbox().size() == 1);
  CHECK(handled.size() == 2);
}

TEST_CASE("a notification router sends to known peers only", "[engine][notify]") {
  Routed r;
  CHECK(r.router->send("b", "early").code() == StatusCode::kNotFound);

  std::vector<std::string> received;
  r.b->setMessageHandler(
      [&](std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload) {
        auto decoded = decodeMessageHeader(header);
        REQUIRE(decoded.isOk());
        received.push_back(decoded->sender + ":" + std::string(payload.begin(), payload.end()));
      });
  REQUIRE(r.peers.addOrUpdate(test::peerMetadata("b", 1, *r.b)).isOk());
  REQUIRE(r.router->send("b", "hello").isOk());
  const auto deadline = Clock::now() + 5s;
  while (received.empty() && Clock::now() < deadline) {
    r.a->progress();
    r.b->progress();
  }
  CHECK(received == std::vector<std::string>{"a:hello"});
}
