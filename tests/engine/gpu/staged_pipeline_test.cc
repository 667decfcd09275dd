// kvx-test-labels: unit
#include "engine/gpu/staged_pipeline.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/gpu/fake_copy_engine.h"
#include "tests/engine/gpu/fake_staged_wire.h"

using namespace kvx;
using namespace kvx::engine::gpu;
using namespace std::chrono_literals;
using kvx::engine::gpu::testing::FakeStagedWire;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::byte> pattern(std::size_t length, unsigned seed) {
  std::vector<std::byte> bytes(length);
  for (std::size_t i = 0; i < length; ++i) bytes[i] = std::byte((i * 131 + seed) & 0xff);
  return bytes;
}

// What happened, in order: copies and wire operations starting and ending, by chunk.
class EventLog {
 public:
  enum class Kind { kCopyStart, kCopyEnd, kWireStart, kWireEnd };

  void add(Kind kind, std::size_t chunk) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      entries_.push_back({kind, chunk});
    }
    added_.notify_all();
  }
  // Waits until the event happened; false if it did not within `timeout`.
  bool waitFor(Kind kind, std::size_t chunk, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return added_.wait_for(lock, timeout, [&] {
      return std::any_of(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.kind == kind && e.chunk == chunk; });
    });
  }
  // Where the event is in the log; REQUIREs that it happened.
  std::size_t position(Kind kind, std::size_t chunk) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].kind == kind && entries_[i].chunk == chunk) return i;
    }
    FAIL("no event " << static_cast<int>(kind) << " for chunk " << chunk);
    return 0;
  }
  // The most chunks between their first event and their last at any one time.
  std::size_t maxChunksInFlight(EventLog::Kind first, EventLog::Kind last) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t now = 0;
    std::size_t most = 0;
    for (const Entry& e : entries_) {
      if (e.kind == first) most = std::max(most, ++now);
      if (e.kind == last) --now;
    }
    return most;
  }

 private:
  struct Entry {
    Kind kind;
    std::size_t chunk;
  };
  mutable std::mutex mutex_;
  std::condition_variable added_;
  std::vector<Entry> entries_;
};

// One move of `bytes` between a "device" buffer (host memory here) and a remote buffer, through
// `buffers` staging buffers of `chunk` bytes, with a copy and a wire operation each taking
// `delay`. `gate`, when set, sees every event on the thread that made it, after it is logged,
// and may hold that thread (the copy engine's or the wire's) before the operation goes on.
struct Rig {
  Rig(StagedDirection way, std::size_t bytes, std::size_t chunkBytes, std::size_t buffers,
      std::chrono::microseconds delay = {})
      : direction(way),
        chunk(chunkBytes),
        device(way == StagedDirection::kDeviceToWire ? pattern(bytes, 7)
                                                     : std::vector<std::byte>(bytes)),
        remote(way == StagedDirection::kWireToDevice ? pattern(bytes, 7)
                                                     : std::vector<std::byte>(bytes)),
        copies(FakeCopyOptions{
            delay, 0,
            [this](const FakeCopyEvent& e) {
              const bool sending = e.request.kind == CopyKind::kDeviceToHost;
              const auto* at =
                  static_cast<const std::byte*>(sending ? e.request.source : e.request.destination);
              record(e.phase == FakeCopyEvent::Phase::kStart ? EventLog::Kind::kCopyStart
                                                             : EventLog::Kind::kCopyEnd,
                     static_cast<std::size_t>(at - device.data()) / chunk);
            }}),
        wire(remote, way, delay, [this](const FakeStagedWire::Event& e) {
          record(e.start ? EventLog::Kind::kWireStart : EventLog::Kind::kWireEnd, e.offset / chunk);
        }) {
    auto created = StagingPool::create(std::make_shared<HostStagingAllocator>(), buffers, chunk);
    REQUIRE(created.isOk());
    pool = *created;
  }

  Result<std::shared_ptr<StagedPipeline>> start(std::vector<DevicePiece> pieces = {}) {
    if (pieces.empty()) pieces.push_back({device.data(), device.size()});
    return StagedPipeline::start({direction, std::move(pieces)}, pool, copies, wire,
                                 [this](Status status) {
                                   ++doneCalls;
                                   wireOpsWhenDone = wire.posted() - wire.completed();
                                   (void)status;
                                 });
  }

  void record(EventLog::Kind kind, std::size_t index) {
    log.add(kind, index);
    if (gate) gate(kind, index);
  }

  StagedDirection direction;
  std::size_t chunk;
  EventLog log;
  std::function<void(EventLog::Kind, std::size_t)> gate;  // set before start()
  std::vector<std::byte> device;
  std::vector<std::byte> remote;
  FakeCopyEngine copies;
  FakeStagedWire wire;
  std::shared_ptr<StagingPool> pool;
  std::atomic<int> doneCalls{0};
  std::atomic<std::uint64_t> wireOpsWhenDone{0};
};

Status finish(const std::shared_ptr<StagedPipeline>& move) {
  return move->wait(Clock::now() + 10s);
}

template <typename Predicate>
void waitUntil(Predicate ready, const char* what) {
  const auto deadline = Clock::now() + 10s;
  while (!ready()) {
    if (Clock::now() > deadline) FAIL("timed out waiting for " << what);
    std::this_thread::sleep_for(1ms);
  }
}

}  // namespace

TEST_CASE("sending: every byte of every piece arrives at its offset", "[staged]") {
  // Pieces: small ones packed into one chunk, an empty one, one spanning several chunks.
  Rig rig(StagedDirection::kDeviceToWire, 0, 4096, 2);
  rig.device = pattern(3 * 4096 + 300, 11);
  std::vector<DevicePiece> pieces = {{rig.device.data() + 8192, 100},
                                     {rig.device.data() + 100, 200},
                                     {rig.device.data(), 0},
                                     {rig.device.data() + 1000, 9000},
                                     {rig.device.data() + 12000, 588}};
  std::size_t total = 0;
  for (const DevicePiece& p : pieces) total += p.length;
  rig.remote.assign(total, std::byte{0});
  auto wire = std::make_unique<FakeStagedWire>(rig.remote, StagedDirection::kDeviceToWire);
  auto move =
      StagedPipeline::start({StagedDirection::kDeviceToWire, pieces}, rig.pool, rig.copies, *wire);
  REQUIRE(move.isOk());
  REQUIRE(finish(*move).isOk());
  std::size_t at = 0;
  for (const DevicePiece& p : pieces) {
    INFO("piece at offset " << at);
    CHECK(std::equal(rig.remote.begin() + static_cast<std::ptrdiff_t>(at),
                     rig.remote.begin() + static_cast<std::ptrdiff_t>(at + p.length),
                     static_cast<std::byte*>(p.address)));
    at += p.length;
  }
  const StagedMoveStats stats = (*move)->stats();
  CHECK(stats.chunks == 3);  // 9888 bytes in chunks of 4096
  CHECK(stats.chunksDone == 3);
  CHECK(stats.bytesDone == total);
  CHECK(stats.wireOpsIssued == 3);
  CHECK(stats.copiesIssued == 6);  // chunk 0: 3 pieces; 1: 1; 2: 2
}

TEST_CASE("receiving: every byte lands in its piece on the device", "[staged]") {
  Rig rig(StagedDirection::kWireToDevice, 10 * 1000 + 7, 1000, 3);
  std::vector<DevicePiece> pieces = {{rig.device.data() + 5000, 5007}, {rig.device.data(), 5000}};
  REQUIRE(finish(*rig.start(pieces)).isOk());
  CHECK(std::equal(rig.device.begin() + 5000, rig.device.end(), rig.remote.begin()));
  CHECK(std::equal(rig.device.begin(), rig.device.begin() + 5000, rig.remote.begin() + 5007));
  CHECK(rig.doneCalls == 1);
}

// The overlap tests prove overlap by the order of events, not by timing. Each operation that
// should overlap another is held at its start until that other one has started too: a
// pipeline that overlaps lets both go on, and the log then shows both in flight at once
// whatever the scheduling; one that serialises them would leave the first waiting for an
// operation that never starts, and the order checks fail once the hold gives up.
constexpr auto kHoldLimit = 2s;

TEST_CASE("sending overlaps copies with the wire: a chunk goes out while the next is copied",
          "[staged]") {
  constexpr std::size_t kChunks = 8;
  using K = EventLog::Kind;
  Rig rig(StagedDirection::kDeviceToWire, kChunks * 4096, 4096, 2);
  // Copy i+1 and the wire operation of chunk i each wait for the other to start.
  rig.gate = [&rig](K kind, std::size_t chunk) {
    if (kind == K::kCopyStart && chunk > 0)
      (void)rig.log.waitFor(K::kWireStart, chunk - 1, kHoldLimit);
    if (kind == K::kWireStart && chunk + 1 < kChunks) {
      (void)rig.log.waitFor(K::kCopyStart, chunk + 1, kHoldLimit);
    }
  };
  REQUIRE(finish(*rig.start()).isOk());
  CHECK(rig.remote == rig.device);
  for (std::size_t i = 0; i + 1 < kChunks; ++i) {
    INFO("chunk " << i);
    CHECK(rig.log.position(K::kCopyEnd, i) < rig.log.position(K::kWireStart, i));
    // Overlap: chunk i is on the wire while chunk i+1 is copied.
    CHECK(rig.log.position(K::kWireStart, i) < rig.log.position(K::kCopyEnd, i + 1));
    CHECK(rig.log.position(K::kCopyStart, i + 1) < rig.log.position(K::kWireEnd, i));
  }
  CHECK(rig.log.maxChunksInFlight(K::kCopyStart, K::kWireEnd) <= 2);
}

TEST_CASE("receiving overlaps the wire with copies to the device", "[staged]") {
  constexpr std::size_t kChunks = 8;
  using K = EventLog::Kind;
  Rig rig(StagedDirection::kWireToDevice, kChunks * 4096, 4096, 2);
  // The copy of chunk i and the wire operation of chunk i+1 each wait for the other to start.
  rig.gate = [&rig](K kind, std::size_t chunk) {
    if (kind == K::kWireStart && chunk > 0)
      (void)rig.log.waitFor(K::kCopyStart, chunk - 1, kHoldLimit);
    if (kind == K::kCopyStart && chunk + 1 < kChunks) {
      (void)rig.log.waitFor(K::kWireStart, chunk + 1, kHoldLimit);
    }
  };
  REQUIRE(finish(*rig.start()).isOk());
  CHECK(rig.remote == rig.device);
  for (std::size_t i = 0; i + 1 < kChunks; ++i) {
    INFO("chunk " << i);
    CHECK(rig.log.position(K::kWireEnd, i) < rig.log.position(K::kCopyStart, i));
    // Overlap: chunk i is copied while chunk i+1 is on the wire.
    CHECK(rig.log.position(K::kCopyStart, i) < rig.log.position(K::kWireEnd, i + 1));
    CHECK(rig.log.position(K::kWireStart, i + 1) < rig.log.position(K::kCopyEnd, i));
  }
  CHECK(rig.log.maxChunksInFlight(K::kWireStart, K::kCopyEnd) <= 2);
}

TEST_CASE("at most N chunks are in flight: copies stop while the wire holds every buffer",
          "[staged]") {
  Rig rig(StagedDirection::kDeviceToWire, 10 * 512, 512, 3);
  rig.wire.pause();
  auto move = rig.start();
  REQUIRE(move.isOk());
  // The copies of three chunks go ahead while the wire holds the first: they overlap it.
  waitUntil([&] { return rig.copies.copiesSucceeded() == 3; }, "three copies");
  waitUntil([&] { return rig.wire.posted() == 3; }, "three chunks on the wire");
  std::this_thread::sleep_for(30ms);
  CHECK(rig.copies.copiesSubmitted() == 3);
  CHECK_FALSE((*move)->finished());
  rig.wire.resume();
  REQUIRE(finish(*move).isOk());
  CHECK(rig.remote == rig.device);
}

TEST_CASE("a failed copy fails the move once, after every operation in flight completed",
          "[staged]") {
  Rig rig(StagedDirection::kDeviceToWire, 16 * 256, 256, 4, 1ms);
  rig.copies.failCopy(5, transportError("injected copy failure"));
  auto move = rig.start();
  REQUIRE(move.isOk());
  const Status status = finish(*move);
  REQUIRE(status.code() == StatusCode::kTransportError);
  CHECK_THAT(status.message(), Catch::Contains("injected copy failure"));
  CHECK_THAT(status.message(), Catch::Contains("chunk 5 of 16"));
  CHECK_THAT(status.message(), Catch::Contains("copy"));
  std::this_thread::sleep_for(30ms);
  CHECK(rig.doneCalls == 1);
  CHECK(rig.wireOpsWhenDone == 0);
  CHECK(rig.wire.posted() == rig.wire.completed());
  CHECK((*move)->stats().chunksDone < 16);
  const std::uint64_t copies = rig.copies.copiesSubmitted();
  std::this_thread::sleep_for(20ms);
  CHECK(rig.copies.copiesSubmitted() == copies);  // nothing started after the failure
}

TEST_CASE("a failed wire operation fails the move once with its reason", "[staged]") {
  Rig rig(StagedDirection::kWireToDevice, 16 * 256, 256, 2);
  rig.wire.failOperation(3, peerFailed("injected wire failure"));
  auto move = rig.start();
  REQUIRE(move.isOk());
  const Status status = finish(*move);
  REQUIRE(status.code() == StatusCode::kPeerFailed);
  CHECK_THAT(status.message(), Catch::Contains("injected wire failure"));
  CHECK_THAT(status.message(), Catch::Contains("chunk 3 of 16"));
  CHECK_THAT(status.message(), Catch::Contains("wire operation"));
  std::this_thread::sleep_for(20ms);
  CHECK(rig.doneCalls == 1);
  CHECK(rig.wire.posted() <= 5);
}

TEST_CASE("cancel stops the move, drains what is in flight and reports CANCELLED once",
          "[staged]") {
  Rig rig(StagedDirection::kDeviceToWire, 32 * 256, 256, 2);
  rig.wire.pause();
  auto move = rig.start();
  REQUIRE(move.isOk());
  waitUntil([&] { return rig.wire.posted() == 2; }, "two chunks on the wire");
  (*move)->cancel();
  // The wire still holds two chunks: the move waits for them before it reports.
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE((*move)->finished());
  rig.wire.resume();
  const Status status = finish(*move);
  REQUIRE(status.code() == StatusCode::kCancelled);
  CHECK_THAT(status.message(), Catch::Contains("of 32 chunks"));
  (*move)->cancel();  // after the end: nothing
  std::this_thread::sleep_for(10ms);
  CHECK(rig.doneCalls == 1);
  CHECK(rig.wire.posted() == 2);
  CHECK(rig.copies.copiesSubmitted() == 2);
}

TEST_CASE("wait has a deadline; the move goes on after it", "[staged]") {
  Rig rig(StagedDirection::kDeviceToWire, 4 * 256, 256, 2);
  rig.wire.pause();
  auto move = rig.start();
  REQUIRE(move.isOk());
  const Status early = (*move)->wait(Clock::now() + 20ms);
  CHECK(early.code() == StatusCode::kTimedOut);
  CHECK_THAT(early.message(), Catch::Contains("0 of 4 chunks"));
  rig.wire.resume();
  CHECK(finish(*move).isOk());
}

TEST_CASE("a staging pool serves one move at a time", "[staged]") {
  Rig rig(StagedDirection::kDeviceToWire, 4 * 256, 256, 2);
  rig.wire.pause();
  auto first = rig.start();
  REQUIRE(first.isOk());
  auto second = rig.start();
  REQUIRE_FALSE(second.isOk());
  CHECK(second.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(second.status().message(), Catch::Contains("already serves another staged move"));
  rig.wire.resume();
  REQUIRE(finish(*first).isOk());
  auto third = rig.start();
  REQUIRE(third.isOk());
  CHECK(finish(*third).isOk());
}

TEST_CASE("an empty move completes at once; a null piece is refused", "[staged]") {
  Rig rig(StagedDirection::kDeviceToWire, 256, 256, 1);
  auto empty =
      StagedPipeline::start({StagedDirection::kDeviceToWire, {}}, rig.pool, rig.copies, rig.wire);
  REQUIRE(empty.isOk());
  CHECK((*empty)->finished());
  CHECK(finish(*empty).isOk());
  auto null = StagedPipeline::start({StagedDirection::kDeviceToWire, {{nullptr, 10}}}, rig.pool,
                                    rig.copies, rig.wire);
  REQUIRE_FALSE(null.isOk());
  CHECK(null.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a closed copy engine fails the move with the engine's reason", "[staged]") {
  Rig rig(StagedDirection::kDeviceToWire, 8 * 256, 256, 2);
  rig.copies.close();
  auto move = rig.start();
  REQUIRE(move.isOk());
  const Status status = finish(*move);
  CHECK(status.code() == StatusCode::kCancelled);
  CHECK_THAT(status.message(), Catch::Contains("copy engine is closed"));
  CHECK(rig.doneCalls == 1);
  CHECK(rig.wire.posted() == 0);
}

TEST_CASE("many moves of many pieces, both ways, without delays", "[staged]") {
  for (unsigned round = 0; round < 40; ++round) {
    const StagedDirection direction =
        round % 2 == 0 ? StagedDirection::kDeviceToWire : StagedDirection::kWireToDevice;
    const std::size_t bytes = 20000 + round * 997;
    Rig rig(direction, bytes, 1000 + round * 13, 1 + round % 4);
    // Pieces of varied sizes covering the buffer, in reverse order.
    std::vector<DevicePiece> pieces;
    std::size_t end = bytes;
    for (std::size_t size = 1 + round; end > 0; size = size * 3 % 4099 + 1) {
      const std::size_t take = std::min(size, end);
      pieces.push_back({rig.device.data() + end - take, take});
      end -= take;
    }
    REQUIRE(finish(*rig.start(pieces)).isOk());
    std::size_t at = 0;
    for (const DevicePiece& p : pieces) {
      const auto* piece = static_cast<const std::byte*>(p.address);
      if (!std::equal(piece, piece + p.length, rig.remote.data() + at)) {
        FAIL("round " << round << ": piece at move offset " << at << " differs");
      }
      at += p.length;
    }
  }
}
