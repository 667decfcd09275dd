// kvx-test-labels: ucx
// A removed peer's writes that are still queued toward this engine never land after the
// removal is announced. The owner of the memory (a decode agent's KV side) frees the blocks
// a lost peer was writing when it sees the peer's departure; bytes that land after that land
// in blocks another request may own. The target here is caller-driven and not progressed, so
// the initiator's writes are certain to wait unread in its sockets (the test checks that
// they do); the departure handler then progresses the target, as its progress thread could
// at that moment, and no byte may change from then on. Over UCX's tcp and kvx's socket
// transport; over shared memory UCX copies into the target without it (nothing queues).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <mutex>
#include <thread>

#include "engine/engine.h"
#include "tests/support/unread_socket_bytes.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kRemovalBytes = 4 << 20;
constexpr std::uint8_t kFree = 0x5a;   // the target's buffer before any write
constexpr std::uint8_t kWrite = 0xc3;  // what the initiator writes

std::unique_ptr<Engine> makeRemovalEngine(const std::string& name, const std::string& transport,
                                          ProgressMode mode) {
  EngineOptions options;
  options.name = name;
  options.transport = transport == "socket" ? "socket" : "ucx";
  options.transportOptions.transports = "tcp";
  options.transportOptions.netDevices = "lo";
  options.progressMode = mode;
  options.maxOpBytes = 64 * 1024;
  return std::move(Engine::create(options).value());
}

// Progresses `engine` for `span`.
void progressFor(Engine& engine, std::chrono::milliseconds span) {
  const auto until = Clock::now() + span;
  while (Clock::now() < until) engine.progress();
}

}  // namespace

TEST_CASE("a removed peer's queued writes do not land after its departure is announced",
          "[engine][peer]") {
  const std::string transport = GENERATE("ucx-tcp", "socket");
  INFO("transport " << transport);
  // The memory outlives the engines that registered it.
  std::vector<std::uint8_t> bytes(kRemovalBytes, kFree);
  std::vector<std::uint8_t> warmBytes(4096, 0);  // for the first write
  std::vector<std::uint8_t> source(kRemovalBytes, kWrite);
  std::unique_ptr<Engine> target = makeRemovalEngine("target", transport, ProgressMode::kCaller);
  const RegionId region = target->registerMemory({"target.kv", bytes.data(), bytes.size()}).value();
  const RegionId warm =
      target->registerMemory({"target.warm", warmBytes.data(), warmBytes.size()}).value();
  std::unique_ptr<Engine> initiator =
      makeRemovalEngine("initiator", transport, ProgressMode::kThread);
  const RegionId local =
      initiator->registerMemory({"initiator.kv", source.data(), source.size()}).value();
  REQUIRE(initiator->addOrUpdatePeer(target->localMetadata()).isOk());
  REQUIRE(target->addOrUpdatePeer(initiator->localMetadata()).isOk());

  // What the departure handler saw: the buffer as its owner would free it.
  std::mutex mutex;
  std::vector<std::uint8_t> atDeparture;
  target->setPeerEventHandler([&](const PeerEvent& event) {
    if (event.kind != PeerEvent::Kind::kLeft || event.peer != "initiator") return;
    {
      std::lock_guard lock(mutex);
      if (!atDeparture.empty()) return;  // one departure; a second would be a bug elsewhere
      atDeparture = bytes;
    }
    // The target's progress thread could run right now: whatever it reads from the removed
    // peer must be dropped, not placed.
    progressFor(*target, 200ms);
  });

  // A first write, with the target progressed, opens the data path (UCX's wire-up, the
  // socket transport's hello need the target to answer).
  TransferRequest warmRequest;
  warmRequest.peer = "target";
  warmRequest.op = TransferOp::kWrite;
  warmRequest.segments.push_back({{local, 0, warmBytes.size()}, {warm, 0, warmBytes.size()}});
  const TransferId warmId = initiator->createTransfer(warmRequest).value();
  REQUIRE(initiator->post(warmId).isOk());
  const Deadline warmDeadline = deadlineIn(10s);
  while (initiator->poll(warmId).state == TransferState::kPending && Clock::now() < warmDeadline) {
    target->progress();
  }
  REQUIRE(initiator->poll(warmId).state == TransferState::kDone);
  REQUIRE(warmBytes == std::vector<std::uint8_t>(warmBytes.size(), kWrite));

  TransferRequest request;
  request.peer = "target";
  request.op = TransferOp::kWrite;
  request.segments.push_back({{local, 0, kRemovalBytes}, {region, 0, kRemovalBytes}});
  const TransferId id = initiator->createTransfer(request).value();
  REQUIRE(initiator->post(id).isOk());

  // The writes wait in the target's sockets: it has not progressed.
  std::uint64_t unread = 0;
  const Deadline deadline = deadlineIn(10s);
  while (Clock::now() < deadline) {
    unread = test::unreadSocketBytes(::getpid());
    if (unread >= 64 * 1024) break;
    std::this_thread::sleep_for(10ms);
  }
  INFO(unread << " bytes unread in this process's sockets");
  REQUIRE(unread >= 64 * 1024);
  std::this_thread::sleep_for(100ms);  // let more of them come (not needed, more to drop)

  REQUIRE(target->removePeer("initiator", peerFailed("the test says it is gone")).isOk());
  progressFor(*target, 200ms);
  {
    std::lock_guard lock(mutex);
    REQUIRE(atDeparture.size() == kRemovalBytes);
    std::size_t changed = 0;
    for (std::size_t i = 0; i < kRemovalBytes; ++i) changed += atDeparture[i] != bytes[i] ? 1 : 0;
    INFO(changed << " bytes changed after the departure was announced");
    CHECK(changed == 0);
  }
  // The initiator learns of it (its connection was closed or reset) and fails the write; the
  // deadline keeps a UCX that does not tell it from holding the test.
  (void)initiator->cancel(id);
  (void)initiator->wait(id, deadlineIn(10s));
}
