#pragma once

// Conformance cases about moving bytes: put/get/flush at every size, many operations,
// messages, allocated memory, an endpoint to oneself. Included by transport_conformance.h.

#include <algorithm>
#include <random>

#include "tests/engine/transport/transport_conformance_support.h"

namespace kvx::test::conformance {

TEST_CASE("conformance: put, flush and get round-trip bytes at every size", "[conformance]") {
  Link link;
  std::mt19937_64 random(42);
  const std::uint64_t sizes[] = {1, 4096, 65536, 1u << 20, 4u << 20};
  std::uint64_t seed = 100;
  for (std::uint64_t size : sizes) {
    const std::uint64_t span = link.local.bytes.size() - size;
    const std::uint64_t localOffset = random() % span;
    const std::uint64_t remoteOffset = random() % span;
    const std::uint64_t backOffset = random() % span;
    INFO("size " << size << ", local +" << localOffset << ", remote +" << remoteOffset);
    ++seed;
    fillPattern(link.local.span(localOffset, size), seed);

    CountingCompletion written;
    link.endpoint->put(link.op(localOffset, remoteOffset, size), &written);
    link.endpoint->flush(&written);
    link.await(written, 2, "put + flush");
    REQUIRE(checkPattern(link.remote.span(remoteOffset, size), seed).empty());

    std::fill_n(link.local.data() + backOffset, size, std::uint8_t{0});
    CountingCompletion read;
    link.endpoint->get(link.op(backOffset, remoteOffset, size), &read);
    link.await(read, 1, "get");
    REQUIRE(checkPattern(link.local.span(backOffset, size), seed).empty());
  }
}

TEST_CASE("conformance: a thousand small puts complete through one completion", "[conformance]") {
  Link link;
  constexpr int kOps = 1000;
  constexpr std::uint64_t kSize = 4096;
  fillPattern(link.local.span(0, kOps * kSize), 7);
  CountingCompletion puts;
  for (int i = 0; i < kOps; ++i) link.endpoint->put(link.op(i * kSize, i * kSize, kSize), &puts);
  CountingCompletion flushed;
  link.endpoint->flush(&flushed);
  link.await(puts, kOps, "1000 puts");
  link.await(flushed, 1, "flush after 1000 puts");
  REQUIRE(checkPattern(link.remote.span(0, kOps * kSize), 7).empty());
}

TEST_CASE("conformance: messages arrive intact, small and large", "[conformance]") {
  Link link;
  const std::vector<std::uint8_t> header1 = {'h', 'e', 'l', 'l', 'o'};
  std::vector<std::uint8_t> payload1(100);
  fillPattern(payload1, 1);
  const std::vector<std::uint8_t> header2(64, 0xab);
  std::vector<std::uint8_t> payload2(3u << 20);  // rendezvous-sized on UCX
  fillPattern(payload2, 2);

  CountingCompletion sent;
  link.endpoint->sendMessage(header1, payload1, &sent);
  link.endpoint->sendMessage(header2, payload2, &sent);
  link.endpoint->sendMessage(header1, {}, &sent);
  link.progressUntil(
      [&] {
        std::lock_guard<std::mutex> lock(link.messagesMutex);
        return link.messages.size() == 3 && sent.count() == 3;
      },
      "three messages");
  REQUIRE(sent.errors() == 0);
  std::lock_guard<std::mutex> lock(link.messagesMutex);
  // Messages on one endpoint may be reordered across protocols (eager vs rendezvous).
  int found = 0;
  for (const Link::Message& m : link.messages) {
    if (m.header == header1 && m.payload == payload1) found |= 1;
    if (m.header == header2 && m.payload.size() == payload2.size() &&
        checkPattern(m.payload, 2).empty()) {
      found |= 2;
    }
    if (m.header == header1 && m.payload.empty()) found |= 4;
  }
  REQUIRE(found == 7);
}

TEST_CASE("conformance: a message sent after a completed flush finds the data in place",
          "[conformance]") {
  Link link;
  constexpr std::uint64_t kSize = 1u << 20;
  std::string atArrival = "no message";
  link.onMessage = [&] { atArrival = checkPattern(link.remote.span(4096, kSize), 9); };
  fillPattern(link.local.span(0, kSize), 9);
  CountingCompletion written;
  link.endpoint->put(link.op(0, 4096, kSize), &written);
  link.endpoint->flush(&written);
  link.await(written, 2, "put + flush");
  const std::vector<std::uint8_t> header = {'d', 'o', 'n', 'e'};
  CountingCompletion sent;
  link.endpoint->sendMessage(header, {}, &sent);
  link.await(sent, 1, "message");
  link.progressUntil(
      [&] {
        std::lock_guard<std::mutex> lock(link.messagesMutex);
        return !link.messages.empty();
      },
      "message arrival");
  std::lock_guard<std::mutex> lock(link.messagesMutex);
  REQUIRE(atArrival.empty());
}

TEST_CASE("conformance: allocated memory works and is addressable remotely", "[conformance]") {
  Link link;
  constexpr std::uint64_t kSize = 1u << 20;
  auto allocatedRemote = link.b->allocateMemory(kSize, MemoryKind::kHost, -1);
  auto allocatedLocal = link.a->allocateMemory(kSize, MemoryKind::kHost, -1);
  INFO(allocatedRemote.status().toString() << " / " << allocatedLocal.status().toString());
  REQUIRE(allocatedRemote.isOk());
  REQUIRE(allocatedLocal.isOk());
  engine::TransportMemory& remote = **allocatedRemote;
  engine::TransportMemory& local = **allocatedLocal;
  REQUIRE(remote.address() != nullptr);
  REQUIRE(remote.length() >= kSize);
  auto* remoteBytes = static_cast<std::uint8_t*>(remote.address());
  auto* localBytes = static_cast<std::uint8_t*>(local.address());

  auto key = link.unpack(remote.packedRemoteKey());
  engine::RmaOp op;
  op.localAddress = localBytes;
  op.localMemory = &local;
  op.remoteAddress = reinterpret_cast<std::uint64_t>(remoteBytes);
  op.remoteKey = key.get();
  op.length = kSize;

  fillPattern(std::span<std::uint8_t>(remoteBytes, kSize), 11);
  CountingCompletion read;
  link.endpoint->get(op, &read);
  link.await(read, 1, "get from allocated memory");
  REQUIRE(checkPattern(std::span<const std::uint8_t>(localBytes, kSize), 11).empty());

  fillPattern(std::span<std::uint8_t>(localBytes, kSize), 12);
  CountingCompletion written;
  link.endpoint->put(op, &written);
  link.endpoint->flush(&written);
  link.await(written, 2, "put into allocated memory");
  REQUIRE(checkPattern(std::span<const std::uint8_t>(remoteBytes, kSize), 12).empty());
  // `key`, then the allocations, go before `link` tears the transports down.
}

TEST_CASE("conformance: a transport can connect to its own address", "[conformance]") {
  std::unique_ptr<engine::Transport> transport = makeTransport("conformance-self");
  Buffer buffer = registerBuffer(*transport, 1u << 20);
  auto connected = transport->connect(transport->localAddress(), nullptr);
  INFO(connected.status().toString());
  REQUIRE(connected.isOk());
  std::shared_ptr<engine::Endpoint> endpoint = std::move(connected).value();
  auto key = endpoint->unpackRemoteKey(buffer.memory->packedRemoteKey(), MemoryKind::kHost);
  REQUIRE(key.isOk());
  fillPattern(buffer.span(0, 65536), 19);
  engine::RmaOp op;
  op.localAddress = buffer.data();
  op.localMemory = buffer.memory.get();
  op.remoteAddress = reinterpret_cast<std::uint64_t>(buffer.data() + 65536);
  op.remoteKey = key->get();
  op.length = 65536;
  CountingCompletion copied;
  endpoint->put(op, &copied);
  endpoint->flush(&copied);
  progressUntil(
      {transport.get()}, [&] { return copied.count() == 2; }, "a put to itself");
  REQUIRE(copied.errors() == 0);
  REQUIRE(checkPattern(buffer.span(65536, 65536), 19).empty());
  key = Status(StatusCode::kCancelled, "released");
  endpoint->close(false);
}

}  // namespace kvx::test::conformance
