// kvx-test-labels: unit
// Transfer turns: one advance() posts at most 16 MiB, then the transfer waits in the
// progress queue behind the others. Over the in-process transport, whose copies happen at
// post time (as shared-memory puts do in UCX), that is what lets a small request posted after
// a big one finish first, and post() return after one turn.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "engine/engine.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kTurn = 16 * kMiB;
constexpr std::uint64_t kBig = 128 * kMiB;

std::unique_ptr<Engine> makeEngine(const std::string& name, ProgressMode mode) {
  EngineOptions options;
  options.name = name;
  options.transport = "inproc";
  options.progressMode = mode;
  options.maxOpsInFlight = 256;  // a window far above one turn: only the turn stops posting
  options.maxOpBytes = kMiB;
  return std::move(Engine::create(options).value());
}

struct Pair {
  explicit Pair(ProgressMode mode) : a(makeEngine("a", mode)), b(makeEngine("b", mode)) {
    for (std::uint64_t i = 0; i < src.size(); i += 4096)
      src[i] = static_cast<std::uint8_t>(i >> 12);
    regionA = a->registerMemory({"src", src.data(), src.size()}).value();
    regionB = b->registerMemory({"dst", dst.data(), dst.size()}).value();
    REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
    REQUIRE(b->addOrUpdatePeer(a->localMetadata()).isOk());
  }
  TransferId write(std::uint64_t offset, std::uint64_t length) {
    TransferRequest r;
    r.peer = "b";
    r.op = TransferOp::kWrite;
    r.segments.push_back({{regionA, offset, length}, {regionB, offset, length}});
    return a->createTransfer(r).value();
  }
  // Not CHECK(src == dst): Catch would print both 129 MiB vectors.
  bool sameBytes(std::uint64_t length) const {
    return std::equal(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(length), dst.begin());
  }
  bool pending(TransferId id) const { return a->poll(id).state == TransferState::kPending; }

  std::vector<std::uint8_t> src = std::vector<std::uint8_t>(kBig + kMiB);
  std::vector<std::uint8_t> dst = std::vector<std::uint8_t>(kBig + kMiB);
  std::unique_ptr<Engine> a, b;
  RegionId regionA, regionB;
};

}  // namespace

TEST_CASE("post() copies one turn, and a small transfer posted next finishes first", "[transfer]") {
  Pair p(ProgressMode::kCaller);
  const TransferId big = p.write(0, kBig);
  const TransferId small = p.write(kBig, 4096);

  REQUIRE(p.a->post(big).isOk());
  // Exactly one turn landed: the first 16 MiB, nothing after it.
  CHECK(std::equal(p.src.begin(), p.src.begin() + kTurn, p.dst.begin()));
  CHECK(std::all_of(p.dst.begin() + kTurn, p.dst.begin() + kBig,
                    [](std::uint8_t byte) { return byte == 0; }));
  CHECK(p.pending(big));

  REQUIRE(p.a->post(small).isOk());
  int rounds = 0;
  while (p.pending(small) && rounds < 100) {
    p.a->progress();
    p.b->progress();
    ++rounds;
  }
  REQUIRE(p.a->wait(small, Clock::now()).isOk());
  CHECK(p.pending(big));  // the big one is still taking its turns

  while (p.pending(big) && rounds < 1000) {
    p.a->progress();
    p.b->progress();
    ++rounds;
  }
  REQUIRE(p.a->wait(big, Clock::now()).isOk());
  CHECK(p.sameBytes(kBig + 4096));
}

TEST_CASE("a transfer of many turns completes with the progress thread", "[transfer]") {
  Pair p(ProgressMode::kThread);
  const TransferId big = p.write(0, kBig + kMiB);
  REQUIRE(p.a->post(big).isOk());
  REQUIRE(p.a->wait(big, deadlineIn(20s)).isOk());
  CHECK(p.src == p.dst);
  auto stats = p.a->stats(big);
  REQUIRE(stats.isOk());
  CHECK(stats->operations == 129);  // 1 MiB operations
}
