#pragma once

// Conformance cases about sleeping on the event fd: a driver that armed the transport and
// sleeps on eventFd() is woken by wake(), and by an operation's completion arriving on any
// of the transport's endpoints. Included by transport_conformance.h.

#include <poll.h>

#include "tests/engine/transport/transport_conformance_support.h"

namespace kvx::test::conformance {

// Progresses `transport` until arm() says it may sleep; false if that never came in 2 s.
inline bool armWithin2s(engine::Transport& transport) {
  const auto deadline = Clock::now() + 2s;
  while (Clock::now() < deadline) {
    transport.progress();
    if (transport.arm()) return true;
  }
  return false;
}

TEST_CASE("conformance: a thread sleeping on the event fd is woken by wake()", "[conformance]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("conformance-sleeper");
  const int fd = transport->eventFd();
  if (fd < 0) {
    WARN("this transport cannot sleep (eventFd() is -1); skipped");
    return;
  }
  REQUIRE(armWithin2s(*transport));
  std::atomic<int> polled{-2};
  std::thread sleeper([&] {
    pollfd entry{fd, POLLIN, 0};
    polled.store(::poll(&entry, 1, 5000));
  });
  std::this_thread::sleep_for(50ms);
  const auto woken = Clock::now();
  transport->wake();
  sleeper.join();
  const auto latency = Clock::now() - woken;
  REQUIRE(polled.load() == 1);
  CHECK(latency < 2s);
  transport->progress();
}

// The event fd must cover every endpoint, not only the transport's address: a get's data
// comes back on the endpoint that asked for it.
TEST_CASE("conformance: a thread sleeping on the event fd wakes for an endpoint's completion",
          "[conformance]") {
  Link link;
  const int fd = link.a->eventFd();
  if (fd < 0) {
    WARN("this transport cannot sleep (eventFd() is -1); skipped");
    return;
  }
  fillPattern(link.remote.span(0, 64u << 10), 41);
  CountingCompletion got;
  link.endpoint->get(link.op(0, 0, 64u << 10), &got);
  REQUIRE(armWithin2s(*link.a));
  if (got.count() == 0) {
    std::atomic<int> polled{-2};
    std::atomic<bool> stop{false};
    std::thread sleeper([&] {
      pollfd entry{fd, POLLIN, 0};
      polled.store(::poll(&entry, 1, 5000));
      stop.store(true);
    });
    // Only the peer progresses: what wakes the sleeper is the answer to a's get.
    while (!stop.load()) {
      if (!link.b->progress()) std::this_thread::sleep_for(50us);
    }
    sleeper.join();
    REQUIRE(polled.load() == 1);
  }
  link.await(got, 1, "the get after the wake-up");
  REQUIRE(got.errors() == 0);
  CHECK(checkPattern(link.local.span(0, 64u << 10), 41).empty());
}

}  // namespace kvx::test::conformance
