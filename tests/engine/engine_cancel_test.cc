// kvx-test-labels: ucx
// Cancelling transfers whose operations are stuck in flight. The initiator reads over UCX tcp
// from targets that are caller-driven and never progressed: a read over tcp needs the
// target's worker to answer it, so every operation stays in flight until the initiator
// resets its link to that target. Reads, so that the bytes that could land late would land
// in the initiator's own buffer, which the test watches.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "engine/engine.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

constexpr auto kGrace = 400ms;
constexpr std::size_t kBytes = 1 << 20;  // per transfer

std::unique_ptr<Engine> makeCancelEngine(const std::string& name, ProgressMode mode,
                                         ReopenGate gate = {}) {
  EngineOptions options;
  options.reopenGate = std::move(gate);
  options.name = name;
  options.transport = "ucx";
  options.transportOptions.transports = "tcp";
  options.transportOptions.netDevices = "lo";
  options.progressMode = mode;
  options.cancelGrace = kGrace;
  options.maxOpsInFlight = 8;
  options.maxOpBytes = 64 * 1024;
  return std::move(Engine::create(options).value());
}

// A target that never progresses unless told to, with one exposed buffer.
struct Target {
  explicit Target(const std::string& name)
      : engine(makeCancelEngine(name, ProgressMode::kCaller)), bytes(kBytes, 0x5a) {
    region = engine->registerMemory({name + ".buf", bytes.data(), bytes.size()}).value();
  }
  std::unique_ptr<Engine> engine;
  std::vector<std::uint8_t> bytes;
  RegionId region;
};

struct Initiator {
  explicit Initiator(ReopenGate gate = {})
      : engine(makeCancelEngine("initiator", ProgressMode::kThread, std::move(gate))) {}

  void addPeer(Target& target) {
    REQUIRE(engine->addOrUpdatePeer(target.engine->localMetadata()).isOk());
  }

  // Posts a read of the whole target buffer into a local buffer of its own.
  TransferId postRead(Target& target) {
    buffers.push_back(std::make_unique<std::vector<std::uint8_t>>(kBytes, 0));
    std::vector<std::uint8_t>& local = *buffers.back();
    const RegionId localRegion =
        engine
            ->registerMemory({"local" + std::to_string(buffers.size()), local.data(), local.size(),
                              MemoryKind::kHost, -1, false})
            .value();
    TransferRequest request;
    request.peer = target.engine->name();
    request.op = TransferOp::kRead;
    request.segments.push_back({{localRegion, 0, kBytes}, {target.region, 0, kBytes}});
    const TransferId id = engine->createTransfer(request).value();
    REQUIRE(engine->post(id).isOk());
    return id;
  }

  // Progresses the target until transfer `id` ends (10 s at most); returns how it ended.
  Status serveUntilEnded(Target& target, TransferId id) {
    const Deadline deadline = deadlineIn(10s);
    while (engine->poll(id).state == TransferState::kPending && Clock::now() < deadline) {
      target.engine->progress();
    }
    return engine->wait(id, Clock::now());
  }

  std::uint64_t linkEpoch(const std::string& peer) {
    // The link a reset opens, once it is open.
    return engine->peer(peer).value()->awaitLink().value()->epoch();
  }

  std::unique_ptr<Engine> engine;
  std::vector<std::unique_ptr<std::vector<std::uint8_t>>> buffers;
};

// A ReopenGate the test opens by hand; it records what it was asked.
struct ManualGate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int calls = 0;
  std::string peer;
  Clock::time_point since{};
  bool abandoned = false;

  static constexpr auto kLongest = 20s;
  ReopenGate gate() {
    ReopenGate gate;
    gate.longest = kLongest;
    gate.wait = [this](const std::string& who, Clock::time_point from,
                       const std::function<bool()>& abandon) {
      std::unique_lock lock(mutex);
      ++calls;
      peer = who;
      since = from;
      const Deadline deadline = from + kLongest;
      while (!open && Clock::now() < deadline) {
        if (abandon()) {
          abandoned = true;
          break;
        }
        changed.wait_for(lock, 5ms);
      }
      return open;
    };
    return gate;
  }
  void openNow() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

}  // namespace

TEST_CASE("transfers stuck on several peers and cancelled together take one grace period",
          "[engine][cancel]") {
  // Three peers with two stuck transfers each: cancelled one at a time, each peer would cost
  // a grace period of its own (three in all); together they cost one.
  constexpr int kPeers = 3;
  constexpr int kPerPeer = 2;
  std::vector<std::unique_ptr<Target>> targets;
  Initiator initiator;
  for (int p = 0; p < kPeers; ++p) {
    targets.push_back(std::make_unique<Target>("target" + std::to_string(p)));
    initiator.addPeer(*targets.back());
  }
  std::vector<TransferId> ids;
  std::vector<std::uint64_t> epochs;
  for (auto& target : targets) {
    for (int i = 0; i < kPerPeer; ++i) ids.push_back(initiator.postRead(*target));
    epochs.push_back(initiator.linkEpoch(target->engine->name()));
  }
  std::this_thread::sleep_for(100ms);
  for (TransferId id : ids) REQUIRE(initiator.engine->poll(id).state == TransferState::kPending);

  const auto start = Clock::now();
  REQUIRE(initiator.engine->cancel(ids).isOk());
  const auto took = Clock::now() - start;
  INFO("the batch cancel took "
       << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(took >= kGrace);  // the stuck operations had their grace period
  CHECK(took < 2 * kGrace);
  for (TransferId id : ids) {
    const TransferStatus status = initiator.engine->poll(id);
    CHECK(status.state == TransferState::kFailed);
    CHECK(status.status.code() == StatusCode::kCancelled);
  }
  // One reset per peer, however many of its transfers were stuck.
  for (int p = 0; p < kPeers; ++p) {
    CHECK(initiator.linkEpoch(targets[p]->engine->name()) == epochs[p] + 1);
  }

  // No byte lands after the cancel reported, even once the targets answer what they got.
  std::vector<std::vector<std::uint8_t>> snapshot;
  for (const auto& buffer : initiator.buffers) snapshot.push_back(*buffer);
  const Deadline until = deadlineIn(300ms);
  while (Clock::now() < until) {
    for (auto& target : targets) target->engine->progress();
  }
  for (std::size_t i = 0; i < snapshot.size(); ++i) {
    INFO("buffer of transfer " << i);
    CHECK(std::memcmp(snapshot[i].data(), initiator.buffers[i]->data(), kBytes) == 0);
  }

  // The fresh links work once the targets make progress.
  const TransferId next = initiator.postRead(*targets[0]);
  const Deadline deadline = deadlineIn(10s);
  while (initiator.engine->poll(next).state == TransferState::kPending && Clock::now() < deadline) {
    targets[0]->engine->progress();
  }
  CHECK(initiator.engine->wait(next, Clock::now()).isOk());
  CHECK(initiator.buffers.back()->front() == 0x5a);
}

TEST_CASE("a batch cancel reports an unknown id after cancelling the others", "[engine][cancel]") {
  Target target("target");
  Initiator initiator;
  initiator.addPeer(target);
  const TransferId first = initiator.postRead(target);
  const TransferId second = initiator.postRead(target);
  const std::vector<TransferId> ids = {first, TransferId(999999), second};
  const Status status = initiator.engine->cancel(ids);
  CHECK(status.code() == StatusCode::kNotFound);
  for (TransferId id : {first, second}) {
    CHECK(initiator.engine->poll(id).status.code() == StatusCode::kCancelled);
  }
  // Cancelling finished transfers again is a no-op.
  const std::vector<TransferId> again = {first, second};
  CHECK(initiator.engine->cancel(again).isOk());
  CHECK(initiator.engine->cancel(first).isOk());
}

TEST_CASE("a transfer the reset of another one's cancel interrupts is posted again on the new link",
          "[engine][cancel]") {
  Target target("target");
  Initiator initiator;
  initiator.addPeer(target);
  const TransferId bystander = initiator.postRead(target);
  const TransferId stuck = initiator.postRead(target);
  const std::uint64_t epoch = initiator.linkEpoch("target");
  std::this_thread::sleep_for(100ms);

  // Only `stuck` is cancelled; the reset its cancel needs closes the link under both.
  REQUIRE(initiator.engine->cancel(stuck).isOk());
  CHECK(initiator.engine->poll(stuck).status.code() == StatusCode::kCancelled);
  CHECK(initiator.linkEpoch("target") == epoch + 1);
  const TransferStatus during = initiator.engine->poll(bystander);
  INFO("the bystander after the reset: " << during.status.toString());
  CHECK(during.state == TransferState::kPending);

  // Posted again on the new link, it completes once the target answers, with every byte.
  const Status done = initiator.serveUntilEnded(target, bystander);
  INFO(done.toString());
  CHECK(done.isOk());
  const std::vector<std::uint8_t> expected(kBytes, 0x5a);
  CHECK(*initiator.buffers[0] == expected);
}

TEST_CASE("a transfer interrupted by more resets than it may repost fails naming the reset",
          "[engine][cancel]") {
  Target target("target");
  Initiator initiator;
  initiator.addPeer(target);
  const TransferId bystander = initiator.postRead(target);
  // Each cancel of another stuck read resets the link under the bystander, which reposts
  // kMaxRelinks times and fails at the next reset.
  for (std::uint32_t reset = 0; reset <= Transfer::kMaxRelinks; ++reset) {
    INFO("reset " << reset);
    REQUIRE(initiator.engine->poll(bystander).state == TransferState::kPending);
    const TransferId stuck = initiator.postRead(target);
    std::this_thread::sleep_for(50ms);
    REQUIRE(initiator.engine->cancel(stuck).isOk());
  }
  const Deadline deadline = deadlineIn(5s);
  while (initiator.engine->poll(bystander).state == TransferState::kPending &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  const TransferStatus failed = initiator.engine->poll(bystander);
  INFO(failed.status.toString());
  REQUIRE(failed.state == TransferState::kFailed);
  CHECK(failed.status.code() == StatusCode::kTransportError);
  CHECK(failed.status.message().find("reset its data path to 'target'") != std::string::npos);
  CHECK(failed.status.message().find("cancel of transfer(s)") != std::string::npos);
}

TEST_CASE("a reset opens the next link only once the gate says the peer was heard from",
          "[engine][cancel]") {
  ManualGate gate;
  Target target("target");
  Initiator initiator(gate.gate());
  initiator.addPeer(target);
  const TransferId bystander = initiator.postRead(target);
  const TransferId stuck = initiator.postRead(target);
  std::this_thread::sleep_for(100ms);
  const auto cancelledAt = Clock::now();
  REQUIRE(initiator.engine->cancel(stuck).isOk());

  // The cancel returned with the old link closed; the next one waits for the gate.
  std::this_thread::sleep_for(300ms);
  {
    std::lock_guard lock(gate.mutex);
    CHECK(gate.calls == 1);
    CHECK(gate.peer == "target");
    CHECK(gate.since >= cancelledAt);  // the reset began in the cancel
    CHECK(gate.since <= Clock::now());
  }
  const std::shared_ptr<RemotePeer> peer = initiator.engine->peer("target").value();
  CHECK_FALSE(peer->link().isOk());  // being reopened: no link yet
  // What waits for the link waits out the gate, and then the open.
  CHECK(peer->reopenWait() == RemotePeer::kReopenWait + ManualGate::kLongest);
  CHECK(initiator.engine->poll(bystander).state == TransferState::kPending);

  gate.openNow();
  const Status done = initiator.serveUntilEnded(target, bystander);
  INFO(done.toString());
  CHECK(done.isOk());
  CHECK(*initiator.buffers[0] == std::vector<std::uint8_t>(kBytes, 0x5a));
}

TEST_CASE("a peer removed while its reset waits at the gate gets no new link", "[engine][cancel]") {
  ManualGate gate;
  Target target("target");
  Initiator initiator(gate.gate());
  initiator.addPeer(target);
  const std::shared_ptr<RemotePeer> peer = initiator.engine->peer("target").value();
  const TransferId bystander = initiator.postRead(target);
  const TransferId stuck = initiator.postRead(target);
  std::this_thread::sleep_for(100ms);
  REQUIRE(initiator.engine->cancel(stuck).isOk());

  REQUIRE(initiator.engine->removePeer("target", peerFailed("target went silent")).isOk());
  const Deadline deadline = deadlineIn(5s);
  while (Clock::now() < deadline) {
    std::lock_guard lock(gate.mutex);
    if (gate.abandoned) break;
  }
  {
    std::lock_guard lock(gate.mutex);
    CHECK(gate.abandoned);
  }
  const Status bystanderEnd = initiator.engine->wait(bystander, deadlineIn(5s));
  INFO(bystanderEnd.toString());
  CHECK(bystanderEnd.code() == StatusCode::kPeerFailed);
  // The failure stays the removal's: no reconnect was tried.
  const auto link = peer->awaitLink();
  INFO(link.status().toString());
  CHECK(link.status().message().find("target went silent") != std::string::npos);
}
