#pragma once

// Helpers for the transport conformance suite (transport_conformance.h): two transports in
// one process, a progress loop with a deadline, counting completions and registered buffers.

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/transport/transport.h"
#include "engine/transport/transport_registry.h"
#include "examples/pair_transfer/pattern.h"

namespace kvx::test {

// The suite's byte pattern: pair_transfer's, positioned at the start of each span.
inline void fillPattern(std::span<std::uint8_t> bytes, std::uint64_t seed) {
  pair_transfer::fillPattern(bytes, 0, seed);
}
inline std::string checkPattern(std::span<const std::uint8_t> bytes, std::uint64_t seed) {
  return pair_transfer::checkPattern(bytes, 0, seed);
}

// What the including test file supplies: which transport, with which options.
struct ConformanceConfig {
  std::string transport;             // registry name: "ucx", "inproc"
  engine::TransportOptions options;  // agentName is set per transport by the suite
  bool detectsPeerLoss = true;       // destroying a peer transport fails our endpoint
  // Endpoint::peerWritesDirectly, as this transport must answer it for a peer in this
  // process (the peer's own process copies into our memory: UCX over shared memory).
  bool peerWritesDirectly = false;
};

// Defined by the test file that includes transport_conformance.h.
ConformanceConfig conformanceConfig();

namespace conformance {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline std::unique_ptr<engine::Transport> makeTransport(const std::string& agentName) {
  ConformanceConfig config = conformanceConfig();
  config.options.agentName = agentName;
  auto transport = engine::createTransport(config.transport, config.options);
  INFO("creating transport '" << config.transport << "': " << transport.status().toString());
  REQUIRE(transport.isOk());
  return std::move(transport).value();
}

// Progresses every transport in `transports` until `done()` holds; fails the test after
// `timeout`, naming `what`.
inline void progressUntil(std::initializer_list<engine::Transport*> transports,
                          const std::function<bool()>& done, const std::string& what,
                          std::chrono::milliseconds timeout = 5000ms) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) {
      FAIL("timed out after " << timeout.count() << " ms waiting for " << what);
    }
    bool any = false;
    for (engine::Transport* t : transports) any = t->progress() || any;
    if (!any) std::this_thread::yield();
  }
}

// Progresses `transports` for `duration` regardless (to catch late, duplicate callbacks).
inline void progressFor(std::initializer_list<engine::Transport*> transports,
                        std::chrono::milliseconds duration) {
  const auto deadline = Clock::now() + duration;
  while (Clock::now() < deadline) {
    for (engine::Transport* t : transports) t->progress();
    std::this_thread::yield();
  }
}

// Counts completions; keeps the first error.
class CountingCompletion final : public engine::Completion {
 public:
  void onComplete(Status status) override {
    if (!status.isOk()) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (errors_++ == 0) firstError_ = status;
    }
    count_.fetch_add(1);
  }
  int count() const { return count_.load(); }
  int errors() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
  }
  Status firstError() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return firstError_;
  }

 private:
  std::atomic<int> count_{0};
  mutable std::mutex mutex_;
  int errors_ = 0;
  Status firstError_;
};

// A heap buffer registered with a transport.
struct Buffer {
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<engine::TransportMemory> memory;

  std::uint8_t* data() { return bytes.data(); }
  std::span<std::uint8_t> span(std::uint64_t offset, std::uint64_t length) {
    return std::span<std::uint8_t>(bytes).subspan(offset, length);
  }
};

inline Buffer registerBuffer(engine::Transport& transport, std::uint64_t length) {
  Buffer buffer;
  buffer.bytes.assign(length, 0);
  auto memory = transport.registerMemory(buffer.bytes.data(), length, MemoryKind::kHost, -1);
  INFO("registerMemory: " << memory.status().toString());
  REQUIRE(memory.isOk());
  buffer.memory = std::move(memory).value();
  return buffer;
}

// Closes `endpoint` while another thread progresses `peer` (a graceful close may need the
// peer's answer, and this test thread is the only one driving it).
inline void closeWhilePeerProgresses(engine::Endpoint& endpoint, engine::Transport& peer,
                                     bool force) {
  std::atomic<bool> stop{false};
  std::thread driver([&] {
    while (!stop.load()) {
      if (!peer.progress()) std::this_thread::sleep_for(50us);
    }
  });
  endpoint.close(force);
  stop.store(true);
  driver.join();
}

// Two transports, `a` connected to `b`, each with a registered buffer; `key` is b's buffer
// key unpacked on a's endpoint. Torn down in the order the Transport contract requires.
class Link {
 public:
  explicit Link(std::uint64_t bufferSize = 8u << 20) {
    a = makeTransport("conformance-a");
    b = makeTransport("conformance-b");
    b->setMessageHandler(
        [this](std::span<const std::uint8_t> header, std::span<const std::uint8_t> payload) {
          std::lock_guard<std::mutex> lock(messagesMutex);
          messages.push_back({std::vector<std::uint8_t>(header.begin(), header.end()),
                              std::vector<std::uint8_t>(payload.begin(), payload.end())});
          if (onMessage) onMessage();
        });
    local = registerBuffer(*a, bufferSize);
    remote = registerBuffer(*b, bufferSize);
    auto connected = a->connect(b->localAddress(), [this](const Status& status) {
      errorCalls.fetch_add(1);
      std::lock_guard<std::mutex> lock(messagesMutex);
      endpointError = status;
    });
    INFO("connect: " << connected.status().toString());
    REQUIRE(connected.isOk());
    endpoint = std::move(connected).value();
    key = unpack(remote.memory->packedRemoteKey());
  }

  ~Link() {
    key.reset();
    if (endpoint && b) closeWhilePeerProgresses(*endpoint, *b, false);
    endpoint.reset();
    local.memory.reset();
    remote.memory.reset();
    b.reset();
    a.reset();
  }

  std::unique_ptr<engine::RemoteKey> unpack(std::span<const std::uint8_t> packed) {
    auto unpacked = endpoint->unpackRemoteKey(packed, MemoryKind::kHost);
    INFO("unpackRemoteKey: " << unpacked.status().toString());
    REQUIRE(unpacked.isOk());
    return std::move(unpacked).value();
  }

  engine::RmaOp op(std::uint64_t localOffset, std::uint64_t remoteOffset, std::uint64_t length) {
    engine::RmaOp rma;
    rma.localAddress = local.data() + localOffset;
    rma.localMemory = local.memory.get();
    rma.remoteAddress = reinterpret_cast<std::uint64_t>(remote.data() + remoteOffset);
    rma.remoteKey = key.get();
    rma.length = length;
    return rma;
  }

  void progressUntil(const std::function<bool()>& done, const std::string& what,
                     std::chrono::milliseconds timeout = 5000ms) {
    conformance::progressUntil({a.get(), b.get()}, done, what, timeout);
  }

  // Waits for `completion` to reach `count` and requires that none failed.
  void await(const CountingCompletion& completion, int count, const std::string& what) {
    progressUntil([&] { return completion.count() >= count; }, what);
    INFO(what << ": " << completion.firstError().toString());
    REQUIRE(completion.errors() == 0);
    REQUIRE(completion.count() == count);
  }

  struct Message {
    std::vector<std::uint8_t> header;
    std::vector<std::uint8_t> payload;
  };

  std::unique_ptr<engine::Transport> a;
  std::unique_ptr<engine::Transport> b;
  Buffer local;
  Buffer remote;
  std::shared_ptr<engine::Endpoint> endpoint;
  std::unique_ptr<engine::RemoteKey> key;

  std::mutex messagesMutex;
  std::vector<Message> messages;    // guarded by messagesMutex
  std::function<void()> onMessage;  // runs inside b's progress, under messagesMutex
  std::atomic<int> errorCalls{0};
  Status endpointError;  // guarded by messagesMutex
};

// b's endpoint back to a, with a's buffer key unpacked on it: for cases where b writes into
// a. Release `key` (assign it a status) before closing `endpoint`.
struct ReverseLink {
  explicit ReverseLink(Link& link) : link_(link) {
    auto back = link.b->connect(link.a->localAddress(), nullptr);
    REQUIRE(back.isOk());
    endpoint = std::move(back).value();
    key = endpoint->unpackRemoteKey(link.local.memory->packedRemoteKey(), MemoryKind::kHost);
    REQUIRE(key.isOk());
  }

  // The first `length` bytes of b's buffer onto the first `length` of a's.
  engine::RmaOp op(std::uint64_t length) const {
    engine::RmaOp rma;
    rma.localAddress = link_.remote.data();
    rma.localMemory = link_.remote.memory.get();
    rma.remoteAddress = reinterpret_cast<std::uint64_t>(link_.local.data());
    rma.remoteKey = key->get();
    rma.length = length;
    return rma;
  }

  std::shared_ptr<engine::Endpoint> endpoint;
  Result<std::unique_ptr<engine::RemoteKey>> key = Status(StatusCode::kCancelled, "none");

 private:
  Link& link_;
};

}  // namespace conformance
}  // namespace kvx::test
