// kvx-test-labels: unit
// How much one advance() of a Transfer posts, against a scripted endpoint: 16 MiB a turn where
// posting is the copy (operations that complete inside their post, or an endpoint that copies
// when posting), then the transfer is handed back to the progress thread's queue; the whole
// window at once where operations complete later (UCX over tcp, a GPU's copy engine), with
// no turn handed back.
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/memory/memory_registry.h"
#include "engine/peer/remote_peer.h"
#include "engine/transfer/transfer.h"
#include "tests/support/memoryless_transport.h"

using namespace kvx;
using namespace kvx::engine;

namespace {

constexpr std::uint64_t kOneMiB = 1ull << 20;

enum class Completes { kInline, kLater };

// Records every put; completes it inside the post or holds it until released.
class ScriptedEndpoint final : public Endpoint {
 public:
  ScriptedEndpoint(Completes completes, bool copiesAtPost)
      : completes_(completes), copiesAtPost_(copiesAtPost) {}
  Result<std::unique_ptr<RemoteKey>> unpackRemoteKey(std::span<const std::uint8_t>,
                                                     MemoryKind) override {
    return std::unique_ptr<RemoteKey>(new RemoteKey());
  }
  void put(const RmaOp&, Completion* completion) override {
    ++posted;
    if (completes_ == Completes::kInline) {
      completion->onComplete(Status::ok());
    } else {
      held_.push_back(completion);
    }
  }
  void get(const RmaOp& op, Completion* completion) override { put(op, completion); }
  void flush(Completion* completion) override { completion->onComplete(Status::ok()); }
  void sendMessage(std::span<const std::uint8_t>, std::span<const std::uint8_t>,
                   Completion* completion) override {
    completion->onComplete(Status::ok());
  }
  void close(bool) override { releaseAll(cancelled("closed")); }
  bool failed() const override { return false; }
  std::string description() const override { return "scripted"; }
  bool copiesWhenPosted() const override { return copiesAtPost_; }

  void releaseAll(const Status& status) {
    std::vector<Completion*> held;
    held.swap(held_);
    for (Completion* completion : held) completion->onComplete(status);
  }

  std::size_t posted = 0;

 private:
  const Completes completes_;
  const bool copiesAtPost_;
  std::vector<Completion*> held_;
};

class ScriptedTransport final : public test::MemorylessTransport {
 public:
  ScriptedTransport(Completes completes, bool copiesAtPost)
      : completes_(completes), copiesAtPost_(copiesAtPost) {}
  std::string_view name() const override { return "scripted"; }
  Result<std::shared_ptr<Endpoint>> connect(std::span<const std::uint8_t>,
                                            EndpointErrorHandler) override {
    endpoint = std::make_shared<ScriptedEndpoint>(completes_, copiesAtPost_);
    return std::shared_ptr<Endpoint>(endpoint);
  }

  std::shared_ptr<ScriptedEndpoint> endpoint;

 private:
  const Completes completes_;
  const bool copiesAtPost_;
};

// Counts the turns handed back, and runs what a completion asks for, as the progress thread
// would, when the test says so.
struct CountingListener final : TransferListener {
  void needsAttention(std::shared_ptr<Transfer> transfer) override {
    queue.push_back(std::move(transfer));
  }
  void needsAttentionWoken(std::shared_ptr<Transfer> transfer) override {
    ++turnsHandedBack;
    queue.push_back(std::move(transfer));
  }
  void finished(Transfer&) override { ++finishedCount; }
  void drain() {
    while (!queue.empty()) {
      auto next = std::move(queue.front());
      queue.erase(queue.begin());
      next->advance();
    }
  }
  std::vector<std::shared_ptr<Transfer>> queue;
  int turnsHandedBack = 0;
  int finishedCount = 0;
};

struct Rig {
  Rig(Completes completes, bool copiesAtPost) : transport(completes, copiesAtPost) {
    PeerMetadata metadata;
    metadata.name = "decode";
    metadata.incarnation = 3;
    metadata.transport = "scripted";
    metadata.dataAddress = {2};
    peer = RemotePeer::connect(transport, metadata).value();
  }
  // `ops` writes of 1 MiB into one remote region, in a window of 256 operations (the
  // transfer caps it at 64 MiB in flight: 64 of them).
  std::shared_ptr<Transfer> transferOf(std::size_t ops) {
    TransferPlan plan;
    auto region = std::make_shared<RemoteRegion>();
    region->info.name = "kv";
    region->packedKey = {7};
    plan.remoteRegions.push_back(region);
    for (std::size_t i = 0; i < ops; ++i) {
      plan.ops.push_back(PlannedOp{nullptr, nullptr, i * kOneMiB, 0, kOneMiB});
    }
    plan.descriptors = ops;
    plan.bytes = ops * kOneMiB;
    return std::make_shared<Transfer>(TransferId{1}, peer, TransferOp::kWrite, std::move(plan),
                                      std::vector<std::uint8_t>{}, std::nullopt, 256, listener);
  }

  ScriptedTransport transport;
  MemoryRegistry registry{transport};
  std::shared_ptr<RemotePeer> peer;
  CountingListener listener;
};

}  // namespace

TEST_CASE("operations that complete later are posted a window at a time, with no turn handed back",
          "[transfer]") {
  Rig rig(Completes::kLater, false);
  auto transfer = rig.transferOf(128);
  REQUIRE(transfer->start(rig.registry).isOk());
  // 64 MiB in flight (the window), not one 16 MiB turn and the rest queued for later.
  CHECK(rig.transport.endpoint->posted == 64);
  CHECK(rig.listener.turnsHandedBack == 0);
  rig.transport.endpoint->releaseAll(Status::ok());
  rig.listener.drain();
  CHECK(rig.transport.endpoint->posted == 128);
  rig.transport.endpoint->releaseAll(Status::ok());
  rig.listener.drain();
  CHECK(transfer->status().state == TransferState::kDone);
  CHECK(rig.listener.turnsHandedBack == 0);
}

TEST_CASE("operations that complete inside their post are posted 16 MiB a turn", "[transfer]") {
  Rig rig(Completes::kInline, false);
  auto transfer = rig.transferOf(64);
  REQUIRE(transfer->start(rig.registry).isOk());
  CHECK(rig.transport.endpoint->posted == 16);
  CHECK(rig.listener.turnsHandedBack == 1);
  rig.listener.drain();
  CHECK(rig.transport.endpoint->posted == 64);
  CHECK(rig.listener.turnsHandedBack == 3);  // after 16, 32 and 48 MiB; the fourth turn ends it
  CHECK(transfer->status().state == TransferState::kDone);
}

TEST_CASE("an endpoint that copies when posting takes 16 MiB turns though it completes later",
          "[transfer]") {
  Rig rig(Completes::kLater, true);
  auto transfer = rig.transferOf(64);
  REQUIRE(transfer->start(rig.registry).isOk());
  CHECK(rig.transport.endpoint->posted == 16);
  CHECK(rig.listener.turnsHandedBack == 1);
  for (int round = 0; round < 8 && transfer->pending(); ++round) {
    rig.transport.endpoint->releaseAll(Status::ok());
    rig.listener.drain();
  }
  CHECK(rig.transport.endpoint->posted == 64);
  CHECK(rig.listener.turnsHandedBack == 3);
  CHECK(transfer->status().state == TransferState::kDone);
}
