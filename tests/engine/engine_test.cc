// kvx-test-labels: unit
// The engine over the in-process transport: two engines in one process, both progress modes.
#include "engine/engine.h"

#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <thread>

#include "examples/pair_transfer/pattern.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Engine> makeEngine(const std::string& name, ProgressMode mode) {
  EngineOptions options;
  options.name = name;
  options.transport = "inproc";
  options.progressMode = mode;
  options.maxOpsInFlight = 8;
  options.maxOpBytes = 64 * 1024;
  return std::move(Engine::create(options).value());
}

struct Pair {
  explicit Pair(ProgressMode mode) : a(makeEngine("a", mode)), b(makeEngine("b", mode)) {
    fillPattern(bufA, 1);
    fillPattern(bufB, 2);
    regionA = a->registerMemory({"bufA", bufA.data(), bufA.size()}).value();
    regionB = b->registerMemory({"bufB", bufB.data(), bufB.size()}).value();
    REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
    REQUIRE(b->addOrUpdatePeer(a->localMetadata()).isOk());
  }
  static void fillPattern(std::vector<std::uint8_t>& v, std::uint64_t seed) {
    pair_transfer::fillPattern(v, 0, seed);
  }
  // Keeps b progressing in caller mode while a waits.
  Status waitA(TransferId id) {
    const Deadline deadline = deadlineIn(5s);
    while (a->poll(id).state == TransferState::kPending && Clock::now() < deadline) {
      a->progress();
      b->progress();
    }
    return a->wait(id, Clock::now());
  }

  std::vector<std::uint8_t> bufA = std::vector<std::uint8_t>(1 << 20);
  std::vector<std::uint8_t> bufB = std::vector<std::uint8_t>(1 << 20);
  std::unique_ptr<Engine> a, b;
  RegionId regionA, regionB;
};

TransferRequest request(const Pair& p, TransferOp op,
                        std::vector<std::array<std::uint64_t, 3>> segs) {
  TransferRequest r;
  r.peer = "b";
  r.op = op;
  for (auto [local, remote, len] : segs) {
    r.segments.push_back({{p.regionA, local, len}, {p.regionB, remote, len}});
  }
  return r;
}

}  // namespace

TEST_CASE("WRITE and READ move exactly the described bytes", "[engine]") {
  auto mode = GENERATE(ProgressMode::kThread, ProgressMode::kCaller);
  Pair p(mode);
  std::vector<std::uint8_t> expectB = p.bufB;
  std::vector<std::uint8_t> expectA = p.bufA;

  auto write =
      p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 1000, 300000}, {500000, 0, 7}}));
  REQUIRE(write.isOk());
  REQUIRE(p.a->post(*write).isOk());
  REQUIRE(p.waitA(*write).isOk());
  std::copy_n(expectA.begin(), 300000, expectB.begin() + 1000);
  std::copy_n(expectA.begin() + 500000, 7, expectB.begin());
  CHECK(p.bufB == expectB);

  auto read = p.a->createTransfer(request(p, TransferOp::kRead, {{4096, 600000, 65536 * 3 + 5}}));
  REQUIRE(read.isOk());
  REQUIRE(p.a->post(*read).isOk());
  REQUIRE(p.waitA(*read).isOk());
  std::copy_n(expectB.begin() + 600000, 65536 * 3 + 5, expectA.begin() + 4096);
  CHECK(p.bufA == expectA);

  auto stats = p.a->stats(*read);
  REQUIRE(stats.isOk());
  CHECK(stats->descriptors == 1);
  CHECK(stats->operations == 4);  // split at 64 KiB
}

TEST_CASE("a finished transfer can be posted again", "[engine]") {
  Pair p(ProgressMode::kCaller);
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 4096}})).value();
  CHECK(p.a->poll(id).state == TransferState::kIdle);
  for (int round = 0; round < 3; ++round) {
    p.bufA[0] = static_cast<std::uint8_t>(round + 10);
    REQUIRE(p.a->post(id).isOk());
    CHECK(p.a->post(id).code() == StatusCode::kFailedPrecondition);  // still pending
    REQUIRE(p.waitA(id).isOk());
    CHECK(p.bufB[0] == round + 10);
  }
  CHECK(p.a->release(id).isOk());
  CHECK(p.a->poll(id).status.code() == StatusCode::kNotFound);
}

TEST_CASE("notification arrives only after the data is in place", "[engine]") {
  Pair p(ProgressMode::kThread);
  for (std::uint64_t i = 0; i < 200; ++i) {
    auto r = request(p, TransferOp::kWrite, {{i * 4096, i * 4096, 4096}});
    r.notification = "req-" + std::to_string(i);
    std::fill_n(p.bufA.begin() + static_cast<std::ptrdiff_t>(i * 4096), 4096,
                static_cast<std::uint8_t>(i + 1));
    auto id = p.a->createTransfer(r).value();
    REQUIRE(p.a->post(id).isOk());
    auto n = p.b->waitNotification(deadlineIn(5s));
    REQUIRE(n.isOk());
    CHECK(n->peer == "a");
    CHECK(n->payload == "req-" + std::to_string(i));
    for (std::uint64_t k = 0; k < 4096; ++k) {
      if (p.bufB[i * 4096 + k] != static_cast<std::uint8_t>(i + 1))
        FAIL("byte " << k << " of request " << i << " not in place");
    }
    REQUIRE(p.a->wait(id, deadlineIn(5s)).isOk());
    REQUIRE(p.a->release(id).isOk());
  }
}

TEST_CASE("bare notifications are delivered with the sender's name", "[engine]") {
  Pair p(ProgressMode::kThread);
  REQUIRE(p.a->sendNotification("b", "hello").isOk());
  REQUIRE(p.a->sendNotification("b", std::string(100000, 'x')).isOk());
  auto first = p.b->waitNotification(deadlineIn(5s));
  auto second = p.b->waitNotification(deadlineIn(5s));
  REQUIRE(first.isOk());
  REQUIRE(second.isOk());
  CHECK(first->payload == "hello");
  CHECK(second->payload.size() == 100000);
  CHECK(p.b->waitNotification(deadlineIn(10ms)).status().code() == StatusCode::kTimedOut);
  CHECK(p.a->sendNotification("nobody", "x").code() == StatusCode::kNotFound);
}

TEST_CASE("bad descriptors are refused before anything moves", "[engine]") {
  Pair p(ProgressMode::kCaller);
  const auto before = p.bufB;
  auto past = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, (1 << 20) - 10, 4096}}));
  CHECK(past.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(past.status().message(), Catch::Contains("descriptor 0 (remote)"));
  CHECK_THAT(past.status().message(), Catch::Contains("'bufB'"));

  auto r = request(p, TransferOp::kWrite, {{0, 0, 4096}});
  r.segments[0].remote.length = 8192;
  CHECK_THAT(p.a->createTransfer(r).status().message(),
             Catch::Contains("differs from remote length"));

  r = request(p, TransferOp::kWrite, {{0, 0, 16}});
  r.segments[0].local.region = RegionId(77);
  CHECK(p.a->createTransfer(r).status().code() == StatusCode::kNotFound);
  r = request(p, TransferOp::kWrite, {{0, 0, 16}});
  r.segments[0].remote.region = RegionId(77);
  CHECK(p.a->createTransfer(r).status().code() == StatusCode::kNotFound);
  r.peer = "stranger";
  CHECK(p.a->createTransfer(r).status().code() == StatusCode::kNotFound);
  CHECK(p.a->createTransfer(TransferRequest{"b", TransferOp::kWrite, {}, {}}).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(p.a->post(TransferId(12345)).code() == StatusCode::kNotFound);
  p.b->progress();
  CHECK(p.bufB == before);
}

TEST_CASE("a region the peer deregistered cannot be written", "[engine]") {
  Pair p(ProgressMode::kCaller);
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 64}})).value();
  REQUIRE(p.b->deregisterMemory(p.regionB).isOk());
  REQUIRE(p.a->addOrUpdatePeer(p.b->localMetadata()).isOk());  // b's update reaches a
  Status s = p.a->post(id);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(s.message(), Catch::Contains("deregistered by its owner"));
  CHECK(p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 64}})).status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("a region the peer replaced is reached through its own key, never the old one",
          "[engine]") {
  // The old region's record is freed when the peer withdraws it; a new one often lands at
  // the same address. Keys are cached per region: the cache must not take one for the other.
  Pair p(ProgressMode::kCaller);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::uint8_t> fresh(4096, 0);
    const RegionId id =
        p.b->registerMemory({"fresh-" + std::to_string(round), fresh.data(), fresh.size()}).value();
    REQUIRE(p.a->addOrUpdatePeer(p.b->localMetadata()).isOk());
    TransferRequest r;
    r.peer = "b";
    r.op = TransferOp::kWrite;
    r.segments.push_back({{p.regionA, 0, 4096}, {id, 0, 4096}});
    const TransferId transfer = p.a->createTransfer(r).value();
    REQUIRE(p.a->post(transfer).isOk());
    const Status done = p.waitA(transfer);
    REQUIRE(done.isOk());
    CHECK(std::equal(fresh.begin(), fresh.end(), p.bufA.begin()));
    REQUIRE(p.a->release(transfer).isOk());
    REQUIRE(p.b->deregisterMemory(id).isOk());
    REQUIRE(p.a->addOrUpdatePeer(p.b->localMetadata()).isOk());
  }
}

TEST_CASE("a region with a pending transfer cannot be deregistered", "[engine]") {
  Pair p(ProgressMode::kCaller);
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 1 << 20}})).value();
  REQUIRE(p.a->post(id).isOk());
  CHECK(p.a->deregisterMemory(p.regionA).code() == StatusCode::kFailedPrecondition);
  REQUIRE(p.waitA(id).isOk());
  CHECK(p.a->deregisterMemory(p.regionA).isOk());
  CHECK(p.a->post(id).code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("cancel ends a pending transfer exactly once with CANCELLED", "[engine]") {
  Pair p(ProgressMode::kCaller);
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 1 << 20}})).value();
  REQUIRE(p.a->post(id).isOk());
  CHECK(p.a->poll(id).state == TransferState::kPending);
  REQUIRE(p.a->cancel(id).isOk());
  TransferStatus s = p.a->poll(id);
  CHECK(s.state == TransferState::kFailed);
  CHECK(s.status.code() == StatusCode::kCancelled);
  CHECK(p.a->cancel(id).isOk());  // idempotent
  CHECK(p.a->wait(id, deadlineIn(1s)).code() == StatusCode::kCancelled);
  // The peer's link still works for the next transfer.
  auto next = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 64}})).value();
  REQUIRE(p.a->post(next).isOk());
  CHECK(p.waitA(next).isOk());
}

TEST_CASE("waiting on a transfer that was never posted fails at once", "[engine]") {
  Pair p(ProgressMode::kCaller);
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 1 << 20}})).value();
  CHECK(p.a->wait(id, deadlineIn(1ms)).code() == StatusCode::kFailedPrecondition);  // never posted
}

TEST_CASE("removing a peer fails its pending transfers", "[engine]") {
  Pair p(ProgressMode::kCaller);
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 1 << 20}})).value();
  REQUIRE(p.a->post(id).isOk());
  REQUIRE(p.a->removePeer("b", peerFailed("test says b is gone")).isOk());
  Status s = p.waitA(id);
  CHECK(s.code() == StatusCode::kPeerFailed);
  CHECK(p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 64}})).status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("prepared lists make transfers by index", "[engine]") {
  Pair p(ProgressMode::kThread);
  std::vector<MemoryRange> local, remote;
  for (std::uint64_t i = 0; i < 64; ++i) {
    local.push_back({p.regionA, i * 4096, 4096});
    remote.push_back({p.regionB, i * 4096, 4096});
  }
  ListId l = p.a->prepareLocalList(local).value();
  ListId r = p.a->prepareRemoteList("b", remote).value();
  std::vector<std::uint32_t> li, ri;
  for (std::uint32_t i = 0; i < 64; ++i) {
    li.push_back(i);
    ri.push_back(63 - i);  // reversed: no coalescing
  }
  auto id = p.a->makeTransfer(TransferOp::kWrite, l, li, r, ri, "done").value();
  CHECK(p.a->stats(id)->operations == 64);
  REQUIRE(p.a->post(id).isOk());
  REQUIRE(p.a->wait(id, deadlineIn(5s)).isOk());
  for (std::uint32_t i = 0; i < 64; ++i) {
    REQUIRE(std::equal(p.bufA.begin() + i * 4096, p.bufA.begin() + (i + 1) * 4096,
                       p.bufB.begin() + (63 - i) * 4096));
  }
  std::vector<std::uint32_t> contiguous(64);
  std::iota(contiguous.begin(), contiguous.end(), 0);
  auto merged = p.a->makeTransfer(TransferOp::kRead, l, contiguous, r, contiguous, std::nullopt);
  CHECK(p.a->stats(*merged)->operations == 4);  // 256 KiB coalesced, split at the 64 KiB cap

  std::vector<std::uint32_t> bad{64};
  CHECK(p.a->makeTransfer(TransferOp::kWrite, l, bad, r, bad, std::nullopt).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(p.a->makeTransfer(TransferOp::kWrite, r, li, l, ri, std::nullopt).status().code() ==
        StatusCode::kInvalidArgument);
  std::vector<MemoryRange> outside{{p.regionB, 1 << 20, 1}};
  CHECK(p.a->prepareRemoteList("b", outside).status().code() == StatusCode::kInvalidArgument);
  CHECK(p.a->releaseList(l).isOk());
  CHECK(p.a->releaseList(l).code() == StatusCode::kNotFound);
}

TEST_CASE("a restarted peer replaces the old incarnation", "[engine]") {
  Pair p(ProgressMode::kCaller);
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite, {{0, 0, 1 << 20}})).value();
  REQUIRE(p.a->post(id).isOk());
  auto reborn = makeEngine("b", ProgressMode::kCaller);
  REQUIRE(p.a->addOrUpdatePeer(reborn->localMetadata()).isOk());
  CHECK(p.waitA(id).code() == StatusCode::kPeerFailed);
}

TEST_CASE("the first error wins and the transfer fails once", "[engine]") {
  Pair p(ProgressMode::kCaller);
  // b withdraws its memory without a's knowledge (stale metadata): every operation fails.
  auto id = p.a->createTransfer(request(p, TransferOp::kWrite,
                                        {{0, 0, 4096}, {8192, 8192, 4096}, {20000, 30000, 10}}))
                .value();
  REQUIRE(p.a->post(id).isOk());  // unpacks and caches the keys
  REQUIRE(p.waitA(id).isOk());
  REQUIRE(p.b->deregisterMemory(p.regionB).isOk());
  REQUIRE(p.a->post(id).isOk());
  Status s = p.waitA(id);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("not inside registered memory"));
  // The reported error stays the first one, however often it is read.
  for (int i = 0; i < 3; ++i) {
    p.a->progress();
    CHECK(p.a->poll(id).status == s);
  }
}
