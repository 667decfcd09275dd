// kvx-test-labels: gpu
// On a machine without a visible CUDA device (or a build without CUDA) every case prints
// "kvx-test-skipped: <reason>" as a Catch2 warning and passes.
// The CUDA copy engine is reached through the factory: the test includes no CUDA header.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "engine/gpu/copy_engine_factory.h"
#include "engine/gpu/copy_ticket.h"
#include "engine/gpu/gpu_runtime.h"
#include "engine/gpu/staged_pipeline.h"
#include "tests/engine/gpu/cuda/gpu_test_support.h"
#include "tests/engine/gpu/fake_staged_wire.h"

using namespace kvx;
using namespace kvx::engine::gpu;
using namespace std::chrono_literals;
using kvx::engine::gpu::testing::FakeStagedWire;
using Clock = std::chrono::steady_clock;
using kvx::test::gpu::difference;
using kvx::test::gpu::pattern;

namespace {

// Device memory for one test case.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    Result<void*> allocated = gpuRuntime().allocateDevice(bytes, 0);
    REQUIRE(allocated.isOk());
    address_ = static_cast<std::byte*>(*allocated);
  }
  ~DeviceBuffer() { gpuRuntime().freeDevice(address_).ignore(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::byte* data() const { return address_; }
  std::size_t size() const { return bytes_; }

 private:
  std::byte* address_ = nullptr;
  std::size_t bytes_;
};

Status copyNow(CopyEngine& engine, void* to, const void* from, std::size_t length, CopyKind kind) {
  return CopyTicket::start(engine, CopyRequest{to, from, length, kind})->wait(Clock::now() + 10s);
}

}  // namespace

TEST_CASE("CUDA copies: host to device, device to device, device to host", "[gpu]") {
  KVX_SKIP_WITHOUT_GPU();
  auto engine = createCopyEngine();
  REQUIRE(engine.isOk());
  INFO((*engine)->describe());
  const std::size_t bytes = 8 << 20;
  const std::vector<std::byte> source = pattern(bytes, 3);
  std::vector<std::byte> back(bytes);
  DeviceBuffer a(bytes), b(bytes);
  REQUIRE(copyNow(**engine, a.data(), source.data(), bytes, CopyKind::kHostToDevice).isOk());
  REQUIRE(copyNow(**engine, back.data(), a.data(), bytes, CopyKind::kDeviceToHost).isOk());
  CHECK(difference(back, source) == "");  // host -> device -> host
  std::fill(back.begin(), back.end(), std::byte{0});
  REQUIRE(copyNow(**engine, b.data(), a.data(), bytes, CopyKind::kDeviceToDevice).isOk());
  REQUIRE(copyNow(**engine, back.data(), b.data(), bytes, CopyKind::kDeviceToHost).isOk());
  CHECK(difference(back, source) == "");  // and device -> device
}

TEST_CASE("CUDA copies through pinned host memory", "[gpu]") {
  KVX_SKIP_WITHOUT_GPU();
  auto engine = createCopyEngine();
  REQUIRE(engine.isOk());
  auto pinned = gpuRuntime().pinnedAllocator();
  REQUIRE(pinned.isOk());
  const std::size_t bytes = 4 << 20;
  auto pool = StagingPool::create(*pinned, 2, bytes);
  REQUIRE(pool.isOk());
  const std::vector<std::byte> source = pattern(bytes, 5);
  std::memcpy((*pool)->buffer(0), source.data(), bytes);
  std::memset((*pool)->buffer(1), 0, bytes);
  DeviceBuffer device(bytes);
  REQUIRE(
      copyNow(**engine, device.data(), (*pool)->buffer(0), bytes, CopyKind::kHostToDevice).isOk());
  REQUIRE(
      copyNow(**engine, (*pool)->buffer(1), device.data(), bytes, CopyKind::kDeviceToHost).isOk());
  const auto* back = static_cast<const std::byte*>((*pool)->buffer(1));
  CHECK(difference(std::vector<std::byte>(back, back + bytes), source) == "");
}

TEST_CASE("the probe tells device memory from host memory on a real device", "[gpu]") {
  KVX_SKIP_WITHOUT_GPU();
  DeviceBuffer device(1 << 20);
  std::vector<std::byte> host(4096);
  const MemoryProbe d = probeMemory(device.data());
  CHECK(d.kind == MemoryProbe::Kind::kCuda);
  CHECK(d.device == 0);
  CHECK(probeMemory(host.data()).kind == MemoryProbe::Kind::kHost);
  CHECK(checkDeclaredKind(device.data(), device.size(), MemoryKind::kCuda, 0).isOk());
  const Status asHost = checkDeclaredKind(device.data(), device.size(), MemoryKind::kHost, -1);
  CHECK(asHost.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(asHost.message(), Catch::Contains("CUDA memory of device 0"));
  const Status asCuda = checkDeclaredKind(host.data(), host.size(), MemoryKind::kCuda, 0);
  CHECK(asCuda.code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("staged send and receive through pinned buffers on real device memory", "[gpu]") {
  KVX_SKIP_WITHOUT_GPU();
  auto engine = createCopyEngine();
  REQUIRE(engine.isOk());
  auto pinned = gpuRuntime().pinnedAllocator();
  REQUIRE(pinned.isOk());
  auto pool = StagingPool::create(*pinned, 2, 1 << 20);
  REQUIRE(pool.isOk());
  CHECK(probeMemory((*pool)->buffer(0)).kind == MemoryProbe::Kind::kHost);

  const std::size_t bytes = (16 << 20) + 12345;
  const std::vector<std::byte> source = pattern(bytes, 9);
  DeviceBuffer device(bytes);
  REQUIRE(copyNow(**engine, device.data(), source.data(), bytes, CopyKind::kHostToDevice).isOk());
  // Two pieces, out of order, so chunks gather and split them.
  const std::size_t half = bytes / 2 + 77;
  const std::vector<DevicePiece> pieces = {{device.data() + half, bytes - half},
                                           {device.data(), half}};

  std::vector<std::byte> remote(bytes);
  {
    FakeStagedWire wire(remote, StagedDirection::kDeviceToWire, 200us);
    auto move =
        StagedPipeline::start({StagedDirection::kDeviceToWire, pieces}, *pool, **engine, wire);
    REQUIRE(move.isOk());
    REQUIRE((*move)->wait(Clock::now() + 60s).isOk());
  }
  std::vector<std::byte> expected(source.begin() + half, source.end());
  expected.insert(expected.end(), source.begin(), source.begin() + half);
  CHECK(difference(remote, expected) == "");

  // Receive the remote bytes back into a second device buffer, then read it.
  DeviceBuffer target(bytes);
  const std::vector<DevicePiece> targetPieces = {{target.data() + half, bytes - half},
                                                 {target.data(), half}};
  {
    FakeStagedWire wire(remote, StagedDirection::kWireToDevice, 200us);
    auto move = StagedPipeline::start({StagedDirection::kWireToDevice, targetPieces}, *pool,
                                      **engine, wire);
    REQUIRE(move.isOk());
    REQUIRE((*move)->wait(Clock::now() + 60s).isOk());
  }
  std::vector<std::byte> back(bytes);
  REQUIRE(copyNow(**engine, back.data(), target.data(), bytes, CopyKind::kDeviceToHost).isOk());
  CHECK(difference(back, source) == "");
}

TEST_CASE("CUDA copy engine: many copies in flight, then close", "[gpu]") {
  KVX_SKIP_WITHOUT_GPU();
  CopyEngineOptions options;
  options.streams = 4;
  auto engine = createCopyEngine(options);
  REQUIRE(engine.isOk());
  auto pinned = gpuRuntime().pinnedAllocator();
  REQUIRE(pinned.isOk());
  constexpr std::size_t kCopies = 64;
  constexpr std::size_t kBytes = 1 << 20;
  auto pool = StagingPool::create(*pinned, kCopies, kBytes);
  REQUIRE(pool.isOk());
  DeviceBuffer device(kCopies * kBytes);
  for (std::size_t i = 0; i < kCopies; ++i) {
    std::memset((*pool)->buffer(i), static_cast<int>(i), kBytes);
  }
  std::vector<std::shared_ptr<CopyTicket>> tickets;
  for (std::size_t i = 0; i < kCopies; ++i) {
    tickets.push_back(
        CopyTicket::start(**engine, CopyRequest{device.data() + i * kBytes, (*pool)->buffer(i),
                                                kBytes, CopyKind::kHostToDevice}));
  }
  (*engine)->close();  // waits for the copies on the streams
  for (std::size_t i = 0; i < kCopies; ++i) {
    INFO("copy " << i);
    CHECK(tickets[i]->ready());
    CHECK(tickets[i]->wait(Clock::now()).isOk());
  }
  auto refused = CopyTicket::start(
      **engine, CopyRequest{device.data(), (*pool)->buffer(0), 16, CopyKind::kHostToDevice});
  CHECK(refused->wait(Clock::now()).code() == StatusCode::kCancelled);
}
