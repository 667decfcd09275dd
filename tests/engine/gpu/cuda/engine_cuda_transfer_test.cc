// kvx-test-labels: gpu ucx
// Two engines in one process move real CUDA device memory over UCX shared memory: a WRITE
// from a's device region into b's, a READ of it back into another region of a, every byte
// checked through host copies. The data path is whatever the loaded UCX allows, and the test
// checks that the transfer's counters agree with it: direct (nothing staged) with a UCX built
// with CUDA; staged through host buffers on both sides with Debian's. A `staged` case forces
// the staged path whatever UCX can do. Without a visible device every case is skipped.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tests/engine/gpu/cuda/gpu_test_support.h"

namespace kvx::test {
namespace {

using namespace std::chrono_literals;
using gpu::difference;
using gpu::pattern;

constexpr std::size_t kRegionBytes = (24 << 20) + 4096;

std::unique_ptr<engine::Engine> makeEngine(const std::string& name, GpuPath path) {
  engine::EngineOptions options;
  options.name = name;
  options.transport = "ucx";
  options.transportOptions.transports = "shm";
  options.gpuPath = path;
  auto engine = engine::Engine::create(options);
  REQUIRE(engine.isOk());
  return std::move(engine).value();
}

struct CudaPair {
  explicit CudaPair(GpuPath path) : a(makeEngine("a", path)), b(makeEngine("b", path)) {
    auto source = a->allocateMemory({"a.src", kRegionBytes, MemoryKind::kCuda, 0, true});
    auto back = a->allocateMemory({"a.back", kRegionBytes, MemoryKind::kCuda, 0, true});
    auto target = b->allocateMemory({"b.dst", kRegionBytes, MemoryKind::kCuda, 0, true});
    INFO(source.status().toString() << " / " << target.status().toString());
    REQUIRE(source.isOk());
    REQUIRE(back.isOk());
    REQUIRE(target.isOk());
    aSource = source->id;
    aBack = back->id;
    bTarget = target->id;
    REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
    REQUIRE(b->addOrUpdatePeer(a->localMetadata()).isOk());
  }

  // Runs one transfer to its end; returns its counters.
  TransferStats move(TransferOp op, RegionId local, RegionId remote) {
    TransferRequest r;
    r.peer = "b";
    r.op = op;
    // Two segments, the second out of order, so that more than one operation moves.
    const std::uint64_t half = kRegionBytes / 2 + 4096;
    r.segments = {{{local, half, kRegionBytes - half}, {remote, half, kRegionBytes - half}},
                  {{local, 0, half}, {remote, 0, half}}};
    auto id = a->createTransfer(r);
    REQUIRE(id.isOk());
    REQUIRE(a->post(*id).isOk());
    const Status done = a->wait(*id, deadlineIn(30s));
    INFO(done.toString());
    REQUIRE(done.isOk());
    auto stats = a->stats(*id);
    REQUIRE(stats.isOk());
    REQUIRE(a->release(*id).isOk());
    return *stats;
  }

  std::vector<std::byte> read(engine::Engine& engine, RegionId region) {
    std::vector<std::byte> bytes(kRegionBytes);
    REQUIRE(engine.copyFromRegion(region, 0, bytes, deadlineIn(10s)).isOk());
    return bytes;
  }

  std::unique_ptr<engine::Engine> a, b;
  RegionId aSource, aBack, bTarget;
};

void writeThenReadBack(GpuPath path) {
  CudaPair p(path);
  const bool direct = p.a->gpuReach().cudaDirect;
  INFO("GPU path: " << (direct ? "direct" : "staged") << "; " << *p.a->dataPathDescription("b"));
  const std::vector<std::byte> source = pattern(kRegionBytes, 11);
  REQUIRE(p.a->copyIntoRegion(p.aSource, 0, source, deadlineIn(10s)).isOk());

  const TransferStats written = p.move(TransferOp::kWrite, p.aSource, p.bTarget);
  CHECK(written.bytes == kRegionBytes);
  CHECK(difference(p.read(*p.b, p.bTarget), source) == "");

  const TransferStats readBack = p.move(TransferOp::kRead, p.aBack, p.bTarget);
  CHECK(difference(p.read(*p.a, p.aBack), source) == "");

  for (const TransferStats& stats : {written, readBack}) {
    if (direct) {
      CHECK(stats.stagedBytes == 0);
      CHECK(stats.remoteStagedBytes == 0);
    } else {
      CHECK(stats.stagedBytes == kRegionBytes);        // this side's device
      CHECK(stats.remoteStagedBytes == kRegionBytes);  // through b's window
    }
  }
}

TEST_CASE("CUDA memory over UCX shm: the path UCX allows", "[gpu]") {
  KVX_SKIP_WITHOUT_GPU();
  writeThenReadBack(GpuPath::kAuto);
}

TEST_CASE("CUDA memory over UCX shm: staged through host buffers", "[gpu]") {
  KVX_SKIP_WITHOUT_GPU();
  writeThenReadBack(GpuPath::kStaged);
}

}  // namespace
}  // namespace kvx::test
