// kvx-test-labels: unit
#include "engine/gpu/fake_gpu_runtime.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <vector>

#include "engine/gpu/copy_ticket.h"

using namespace kvx;
using namespace kvx::engine::gpu;

TEST_CASE("fake device memory probes as CUDA memory of its device", "[fake_gpu]") {
  FakeGpuRuntime runtime(2);
  auto device = runtime.allocateDevice(10000, 1);
  REQUIRE(device.isOk());
  const auto* bytes = static_cast<const std::byte*>(*device);
  CHECK(runtime.probe(bytes).kind == MemoryProbe::Kind::kCuda);
  CHECK(runtime.probe(bytes).device == 1);
  CHECK(runtime.probe(bytes + 9999).kind == MemoryProbe::Kind::kCuda);
  CHECK(runtime.probe(bytes + 10000).kind == MemoryProbe::Kind::kHost);

  const auto probe = [&](const void* p) { return runtime.probe(p); };
  CHECK(checkDeclaredKind(*device, 10000, MemoryKind::kCuda, 1, probe).isOk());
  CHECK(checkDeclaredKind(*device, 10000, MemoryKind::kCuda, 0, probe).code() ==
        StatusCode::kFailedPrecondition);

  std::vector<std::byte> host(4096);
  CHECK(checkDeclaredKind(host.data(), host.size(), MemoryKind::kCuda, 0, probe).code() ==
        StatusCode::kFailedPrecondition);
  runtime.declareDeviceMemory(host.data(), host.size(), 0);
  CHECK(checkDeclaredKind(host.data(), host.size(), MemoryKind::kCuda, 0, probe).isOk());

  CHECK(runtime.freeDevice(*device).isOk());
  CHECK(runtime.probe(bytes).kind == MemoryProbe::Kind::kHost);
  CHECK(runtime.allocateDevice(16, 2).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("fake copy engines are handles on the device's engine", "[fake_gpu]") {
  FakeGpuRuntime runtime(1);
  auto handle = runtime.createCopyEngine(CopyEngineOptions{});
  REQUIRE(handle.isOk());
  std::vector<int> from(100, 7), to(100, 0);
  CopyRequest request{to.data(), from.data(), from.size() * sizeof(int), CopyKind::kDeviceToHost};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  CHECK(CopyTicket::start(**handle, request)->wait(deadline).isOk());
  CHECK(to == from);
  CHECK(runtime.copyEngine(0).copiesSucceeded() == 1);

  (*handle)->close();
  CHECK(CopyTicket::start(**handle, request)->wait(deadline).code() == StatusCode::kCancelled);
  // Closing a handle leaves the shared engine running for the others.
  auto other = runtime.createCopyEngine(CopyEngineOptions{});
  REQUIRE(other.isOk());
  CHECK(CopyTicket::start(**other, request)->wait(deadline).isOk());
}
