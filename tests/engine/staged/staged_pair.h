#pragma once

// Two engines in one process for the staged GPU path, over the transport a test file names
// by defining kvx::test::stagedConfig(). Both use a FakeGpuRuntime, so "device memory" is
// host memory declared CUDA: agent "a" owns a CUDA region (the staged side) and a host
// region; agent "b" exposes a host region and a CUDA region, which "a" reaches through b's
// staging window (or must refuse to address, when b has none: `windowSlots` 0). Both drive
// progress with their own threads.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/gpu/fake_gpu_runtime.h"

namespace kvx::test {

struct StagedConfig {
  std::string transport;   // "inproc" or "ucx"
  std::string transports;  // UCX_TLS selection ("shm", "tcp"); empty for inproc
};

// Defined once by each test file that includes the staged cases.
StagedConfig stagedConfig();

namespace staged {

using namespace std::chrono_literals;

constexpr std::size_t kRegionBytes = 1 << 20;
constexpr std::size_t kChunkBytes = 64 << 10;
constexpr std::size_t kWindowSlotBytes = 24 << 10;  // smaller than a chunk: chunks split
constexpr std::uint32_t kWindowSlots = 3;

inline std::unique_ptr<engine::Engine> makeStagedEngine(
    const std::string& name, std::shared_ptr<engine::gpu::FakeGpuRuntime> gpu,
    std::uint32_t windowSlots = kWindowSlots,
    std::chrono::milliseconds replyTimeout = std::chrono::seconds(5)) {
  const StagedConfig config = stagedConfig();
  engine::EngineOptions options;
  options.name = name;
  options.transport = config.transport;
  options.transportOptions.transports = config.transports;
  options.gpuRuntime = std::move(gpu);
  options.maxOpBytes = 256 << 10;
  options.staging.chunkBytes = kChunkBytes;
  options.staging.buffers = 3;
  options.staging.windowSlots = windowSlots;
  options.staging.windowSlotBytes = kWindowSlotBytes;
  options.staging.replyTimeout = replyTimeout;
  auto engine = engine::Engine::create(options);
  REQUIRE(engine.isOk());
  return std::move(engine).value();
}

// Byte i of a region filled with `seed`.
inline std::uint8_t patternByte(std::uint64_t seed, std::size_t i) {
  return static_cast<std::uint8_t>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

inline void fill(std::span<std::uint8_t> bytes, std::uint64_t seed) {
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = patternByte(seed, i);
}

struct StagedPair {
  explicit StagedPair(std::uint32_t windowSlots = kWindowSlots,
                      std::chrono::milliseconds replyTimeout = std::chrono::seconds(5)) {
    a = makeStagedEngine("a", gpuA, windowSlots, replyTimeout);
    b = makeStagedEngine("b", gpuB, windowSlots, replyTimeout);
    auto device = a->allocateMemory({"a.gpu", kRegionBytes, MemoryKind::kCuda, 0, true});
    REQUIRE(device.isOk());
    deviceA = {static_cast<std::uint8_t*>(device->address), kRegionBytes};
    regionDeviceA = device->id;
    regionHostA = a->registerMemory({"a.host", hostA.data(), hostA.size()}).value();
    regionHostB = b->registerMemory({"b.host", hostB.data(), hostB.size()}).value();
    auto remoteDevice = b->allocateMemory({"b.gpu", kRegionBytes, MemoryKind::kCuda, 0, true});
    REQUIRE(remoteDevice.isOk());
    regionDeviceB = remoteDevice->id;
    deviceB = {static_cast<std::uint8_t*>(remoteDevice->address), kRegionBytes};
    fill(deviceA, 1);
    fill(deviceB, 4);
    fill(hostA, 2);
    fill(hostB, 3);
    REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
    REQUIRE(b->addOrUpdatePeer(a->localMetadata()).isOk());
  }

  engine::gpu::FakeCopyEngine& copiesA() { return gpuA->copyEngine(0); }
  engine::gpu::FakeCopyEngine& copiesB() { return gpuB->copyEngine(0); }

  // A segment from a's `local` region to b's `remote` region.
  static TransferSegment segment(RegionId local, std::uint64_t localOffset, RegionId remote,
                                 std::uint64_t remoteOffset, std::uint64_t length) {
    return TransferSegment{{local, localOffset, length}, {remote, remoteOffset, length}};
  }

  // Call before the test reads b's memory after a's wait. A notification sent by a now
  // follows everything a's finished transfers put there, so once b takes it, b's memory is
  // complete: how b's user learns that (the API's contract), and an ordering ThreadSanitizer
  // can see. a's wait alone is not one on shared memory: UCX orders the data before a's
  // completion through its own shared-memory ring, which is not instrumented.
  void syncB() {
    REQUIRE(a->sendNotification("b", "sync").isOk());
    const Deadline deadline = deadlineIn(std::chrono::seconds(10));
    while (true) {
      auto note = b->waitNotification(deadline);
      REQUIRE(note.isOk());
      if (note->payload == "sync") return;  // earlier notifications left unread are skipped
    }
  }

  // The test is done reading (or writing) b's device memory until its next transfer: b's copy
  // engine takes its lock before each copy, so taking it here orders the test's accesses
  // before the copies of transfers posted afterwards (whose requests travel through shared memory,
  // which ThreadSanitizer does not see).
  void doneWithDeviceB() { (void)copiesB().copiesSubmitted(); }

  // Creates, posts and waits for `r` on a (10 s); returns its id for stats and reposts.
  Result<TransferId> moveToEnd(const TransferRequest& r) {
    auto id = a->createTransfer(r);
    REQUIRE(id.isOk());
    REQUIRE(a->post(*id).isOk());
    REQUIRE(a->wait(*id, deadlineIn(std::chrono::seconds(10))).isOk());
    return id;
  }

  TransferRequest request(TransferOp op, std::vector<TransferSegment> segments) const {
    TransferRequest r;
    r.peer = "b";
    r.op = op;
    r.segments = std::move(segments);
    return r;
  }

  std::shared_ptr<engine::gpu::FakeGpuRuntime> gpuA =
      std::make_shared<engine::gpu::FakeGpuRuntime>();
  std::shared_ptr<engine::gpu::FakeGpuRuntime> gpuB =
      std::make_shared<engine::gpu::FakeGpuRuntime>();
  std::vector<std::uint8_t> hostA = std::vector<std::uint8_t>(kRegionBytes);
  std::vector<std::uint8_t> hostB = std::vector<std::uint8_t>(kRegionBytes);
  std::span<std::uint8_t> deviceA;
  std::span<std::uint8_t> deviceB;
  std::unique_ptr<engine::Engine> a, b;
  RegionId regionDeviceA, regionHostA, regionHostB, regionDeviceB;
};

// Copies what `segments` describe, as a WRITE would, from a's buffers into `expected` (b's).
inline void applyWrite(const StagedPair& p, const std::vector<TransferSegment>& segments,
                       std::vector<std::uint8_t>& expected) {
  for (const TransferSegment& s : segments) {
    const std::uint8_t* from =
        s.local.region == p.regionDeviceA ? p.deviceA.data() : p.hostA.data();
    std::memcpy(expected.data() + s.remote.offset, from + s.local.offset, s.local.length);
  }
}

// The first differing byte, or "" when equal.
inline std::string firstDifference(std::span<const std::uint8_t> got,
                                   std::span<const std::uint8_t> want) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return "byte " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(want[i]);
    }
  }
  return {};
}

}  // namespace staged
}  // namespace kvx::test
