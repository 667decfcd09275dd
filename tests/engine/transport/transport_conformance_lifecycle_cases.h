#pragma once

// Conformance cases about lifecycle and failure: malformed input, close (graceful and
// forced), a dying peer, concurrent posting. Included by transport_conformance.h.

#include "tests/engine/transport/transport_conformance_support.h"

namespace kvx::test::conformance {

TEST_CASE("conformance: unpacking a garbage remote key fails cleanly", "[conformance]") {
  Link link;
  std::vector<std::uint8_t> garbage(48);
  fillPattern(garbage, 13);
  CHECK_FALSE(link.endpoint->unpackRemoteKey(garbage, MemoryKind::kHost).isOk());
  CHECK_FALSE(link.endpoint->unpackRemoteKey({}, MemoryKind::kHost).isOk());
  const auto packed = link.remote.memory->packedRemoteKey();
  if (packed.size() > 1) {
    std::vector<std::uint8_t> truncated(packed.begin(), packed.end() - 1);
    CHECK_FALSE(link.endpoint->unpackRemoteKey(truncated, MemoryKind::kHost).isOk());
  }
}

TEST_CASE("conformance: connecting to a garbage address fails cleanly", "[conformance]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("conformance-garbage");
  std::vector<std::uint8_t> garbage(64);
  fillPattern(garbage, 17);
  CHECK_FALSE(transport->connect(garbage, nullptr).isOk());
  CHECK_FALSE(transport->connect({}, nullptr).isOk());
  std::vector<std::uint8_t> truncated = transport->localAddress();
  truncated.pop_back();
  CHECK_FALSE(transport->connect(truncated, nullptr).isOk());
}

TEST_CASE("conformance: bad arguments are rejected with INVALID_ARGUMENT", "[conformance]") {
  Link link;
  std::uint8_t byte = 0;
  CHECK(link.a->registerMemory(nullptr, 64, MemoryKind::kHost, -1).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(link.a->registerMemory(&byte, 0, MemoryKind::kHost, -1).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(link.a->allocateMemory(0, MemoryKind::kHost, -1).status().code() ==
        StatusCode::kInvalidArgument);

  CountingCompletion rejected;
  engine::RmaOp empty = link.op(0, 0, 0);
  link.endpoint->put(empty, &rejected);
  link.progressUntil([&] { return rejected.count() == 1; }, "a zero-length put to be rejected");
  CHECK(rejected.firstError().code() == StatusCode::kInvalidArgument);
  engine::RmaOp nullLocal = link.op(0, 0, 64);
  nullLocal.localAddress = nullptr;
  link.endpoint->get(nullLocal, &rejected);
  link.progressUntil([&] { return rejected.count() == 2; }, "a get to null to be rejected");
  CHECK(rejected.errors() == 2);
}

TEST_CASE("conformance: endpoints describe themselves and host memory is supported",
          "[conformance]") {
  Link link;
  CHECK_FALSE(link.endpoint->description().empty());
  CHECK(link.a->supportsMemoryKind(MemoryKind::kHost));
  CHECK_FALSE(link.endpoint->failed());
}

TEST_CASE("conformance: operations after a forced close fail at once", "[conformance]") {
  Link link;
  link.key.reset();
  closeWhilePeerProgresses(*link.endpoint, *link.b, true);
  CountingCompletion late;
  link.endpoint->put(link.op(0, 0, 64), &late);
  REQUIRE(late.count() == 1);
  link.endpoint->flush(&late);
  REQUIRE(late.count() == 2);
  const std::vector<std::uint8_t> header = {1, 2, 3};
  link.endpoint->sendMessage(header, {}, &late);
  REQUIRE(late.count() == 3);
  REQUIRE(late.errors() == 3);
  CHECK(late.firstError().code() == StatusCode::kFailedPrecondition);
  link.endpoint->close(true);  // idempotent
  progressFor({link.a.get(), link.b.get()}, 200ms);
  REQUIRE(late.count() == 3);
}

TEST_CASE("conformance: a graceful close leaves the peer's endpoint back to us working",
          "[conformance]") {
  Link link;
  ReverseLink back(link);
  std::shared_ptr<engine::Endpoint>& reverse = back.endpoint;
  const engine::RmaOp op = back.op(4096);
  CountingCompletion before;
  reverse->put(op, &before);
  reverse->flush(&before);
  link.await(before, 2, "b -> a before a closes");

  link.key.reset();
  closeWhilePeerProgresses(*link.endpoint, *link.b, false);
  fillPattern(link.remote.span(0, 4096), 23);
  CountingCompletion after;
  reverse->put(op, &after);
  reverse->flush(&after);
  link.await(after, 2, "b -> a after a closed its endpoint");
  REQUIRE(checkPattern(link.local.span(0, 4096), 23).empty());
  CHECK_FALSE(reverse->failed());
  back.key = Status(StatusCode::kCancelled, "released");
  closeWhilePeerProgresses(*reverse, *link.a, false);
}

// What a decode agent relies on to free the blocks of a lost prefill agent at once
// (Endpoint::peerWritesDirectly): unless its endpoint says the peer copies into its memory
// itself, closing that endpoint (force) and dropping the peer end the peer's writes there.
TEST_CASE("conformance: a closed and dropped peer's writes land only where it writes directly",
          "[conformance]") {
  Link link;
  ReverseLink back(link);
  std::shared_ptr<engine::Endpoint>& reverse = back.endpoint;
  const engine::RmaOp op = back.op(64u << 10);
  fillPattern(link.remote.span(0, op.length), 23);
  CountingCompletion before;
  reverse->put(op, &before);
  reverse->flush(&before);
  link.await(before, 2, "b -> a before a drops b");
  REQUIRE(checkPattern(link.local.span(0, op.length), 23).empty());

  const bool direct = link.endpoint->peerWritesDirectly();
  INFO("a's endpoint to b: " << link.endpoint->description() << "; b writes directly: " << direct);
  CHECK(direct == conformanceConfig().peerWritesDirectly);
  link.key.reset();
  closeWhilePeerProgresses(*link.endpoint, *link.b, true);
  link.endpoint.reset();
  link.a->dropPeer(link.b->localAddress());

  fillPattern(link.remote.span(0, op.length), 29);
  CountingCompletion after;
  reverse->put(op, &after);
  reverse->flush(&after);
  // Whether b learns that its writes went nowhere varies; a must not take them either way.
  const auto until = Clock::now() + 3000ms;
  while (after.count() < 2 && Clock::now() < until) {
    link.a->progress();
    link.b->progress();
    std::this_thread::yield();
  }
  progressFor({link.a.get(), link.b.get()}, 300ms);
  if (!direct) CHECK(checkPattern(link.local.span(0, op.length), 23).empty());
  back.key = Status(StatusCode::kCancelled, "released");
  reverse->close(true);
}

TEST_CASE("conformance: a forced close completes every operation in flight exactly once",
          "[conformance]") {
  Link link;
  constexpr int kPuts = 16;
  constexpr std::uint64_t kSize = 256u << 10;
  std::vector<CountingCompletion> completions(2 * kPuts + 2);
  std::vector<std::uint8_t> payload(1u << 20, 0x5a);
  const std::vector<std::uint8_t> header = {'x'};
  for (int i = 0; i < kPuts; ++i) {
    link.endpoint->put(link.op(i * kSize, i * kSize, kSize), &completions[2 * i]);
    link.endpoint->get(link.op((kPuts + i) * kSize, i * kSize, kSize), &completions[2 * i + 1]);
  }
  link.endpoint->sendMessage(header, payload, &completions[2 * kPuts]);
  link.endpoint->flush(&completions[2 * kPuts + 1]);
  // Nobody progressed the peer: most of this is still in flight.
  link.key.reset();
  const auto started = Clock::now();
  link.endpoint->close(true);
  INFO("close(force) took "
       << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count()
       << " ms");
  for (std::size_t i = 0; i < completions.size(); ++i) {
    INFO("operation " << i);
    REQUIRE(completions[i].count() == 1);
  }
  progressFor({link.a.get(), link.b.get()}, 300ms);
  for (std::size_t i = 0; i < completions.size(); ++i) {
    INFO("operation " << i << " after more progress");
    REQUIRE(completions[i].count() == 1);
  }
}

TEST_CASE("conformance: the endpoint error handler fires when the peer transport dies",
          "[conformance]") {
  if (!conformanceConfig().detectsPeerLoss) {
    WARN("this transport does not detect a peer destroyed in the same process; skipped");
    return;
  }
  Link link;
  fillPattern(link.local.span(0, 4096), 21);
  CountingCompletion written;
  link.endpoint->put(link.op(0, 0, 4096), &written);
  link.endpoint->flush(&written);
  link.await(written, 2, "put + flush before the peer dies");

  // Posted without the peer progressing, then the peer goes away.
  CountingCompletion inFlight;
  link.endpoint->put(link.op(0, 0, 1u << 20), &inFlight);
  link.remote.memory.reset();
  link.b.reset();

  conformance::progressUntil(
      {link.a.get()}, [&] { return link.errorCalls.load() > 0; }, "the endpoint error handler",
      10000ms);
  conformance::progressUntil(
      {link.a.get()}, [&] { return inFlight.count() > 0; }, "the in-flight put to complete");
  REQUIRE(link.endpoint->failed());
  REQUIRE(inFlight.count() == 1);
  if (inFlight.errors() > 0) CHECK(inFlight.firstError().code() == StatusCode::kPeerFailed);
  {
    std::lock_guard<std::mutex> lock(link.messagesMutex);
    CHECK(link.endpointError.code() == StatusCode::kPeerFailed);
  }
  CountingCompletion after;
  link.endpoint->put(link.op(0, 0, 4096), &after);
  conformance::progressUntil(
      {link.a.get()}, [&] { return after.count() > 0; }, "a put after the failure");
  REQUIRE(after.errors() == 1);
  CHECK(after.firstError().code() == StatusCode::kPeerFailed);
  progressFor({link.a.get()}, 100ms);
  CHECK(link.errorCalls.load() == 1);
  CHECK(inFlight.count() == 1);
}

// What the engine does when a data path fails: it closes the endpoint from inside the handler.
TEST_CASE("conformance: the endpoint error handler may close its endpoint", "[conformance]") {
  if (!conformanceConfig().detectsPeerLoss) {
    WARN("this transport does not detect a peer destroyed in the same process; skipped");
    return;
  }
  Link link;
  std::atomic<int> closedInHandler{0};
  std::weak_ptr<engine::Endpoint> weak;
  auto connected = link.a->connect(link.b->localAddress(), [&](const Status&) {
    if (auto endpoint = weak.lock()) endpoint->close(true);
    closedInHandler.fetch_add(1);
  });
  REQUIRE(connected.isOk());
  std::shared_ptr<engine::Endpoint> doomed = std::move(connected).value();
  weak = doomed;
  auto key = doomed->unpackRemoteKey(link.remote.memory->packedRemoteKey(), MemoryKind::kHost);
  REQUIRE(key.isOk());
  engine::RmaOp op = link.op(0, 0, 4096);
  op.remoteKey = key->get();
  CountingCompletion written;
  doomed->put(op, &written);
  doomed->flush(&written);
  link.await(written, 2, "a put before the peer dies");
  link.remote.memory.reset();
  link.b.reset();
  conformance::progressUntil(
      {link.a.get()}, [&] { return closedInHandler.load() == 1; },
      "the handler to close its endpoint", 10000ms);
  CountingCompletion after;
  doomed->put(op, &after);
  REQUIRE(after.count() == 1);
  CHECK(after.errors() == 1);
  key = Status(StatusCode::kCancelled, "released");
}

TEST_CASE("conformance: threads post while another thread drives progress", "[conformance]") {
  Link link;
  constexpr int kThreads = 2;
  constexpr int kOpsPerThread = 300;
  constexpr std::uint64_t kSize = 4096;
  fillPattern(link.local.span(0, kThreads * kOpsPerThread * kSize), 31);
  std::atomic<bool> stop{false};
  std::thread driver([&] {
    while (!stop.load()) {
      const bool a = link.a->progress();
      const bool b = link.b->progress();
      if (!a && !b) std::this_thread::yield();
    }
  });
  std::vector<CountingCompletion> completions(kThreads);
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&, t] {
      for (int i = 0; i < kOpsPerThread; ++i) {
        const std::uint64_t offset = (t * kOpsPerThread + i) * kSize;
        link.endpoint->put(link.op(offset, offset, kSize), &completions[t]);
      }
      link.endpoint->flush(&completions[t]);
    });
  }
  for (std::thread& poster : posters) poster.join();
  const auto deadline = Clock::now() + 10s;
  auto done = [&] {
    for (const CountingCompletion& c : completions) {
      if (c.count() < kOpsPerThread + 1) return false;
    }
    return true;
  };
  while (!done() && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  stop.store(true);
  driver.join();
  REQUIRE(done());
  for (const CountingCompletion& c : completions) REQUIRE(c.errors() == 0);
  REQUIRE(checkPattern(link.remote.span(0, kThreads * kOpsPerThread * kSize), 31).empty());
}

}  // namespace kvx::test::conformance
