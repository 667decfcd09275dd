// kvx-test-labels: unit
#include "engine/gpu/fake_gpu_runtime.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

namespace {

// How a child that runs `touch` ends: the signal that killed it, or 0 when it exited.
template <typename Touch>
int signalOfChild(Touch touch) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The default action, not a sanitizer's report: sanitizers catch SIGSEGV to report it.
    signal(SIGSEGV, SIG_DFL);
    touch();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

}  // namespace

TEST_CASE("strict fake device memory faults on a host access and moves through copies",
          "[fake_gpu]") {
  FakeGpuRuntime runtime(1, {}, "test", FakeDeviceAccess::kCopyEngineOnly);
  constexpr std::size_t kBytes = 3 * 4096 + 100;
  auto device = runtime.allocateDevice(kBytes, 0);
  REQUIRE(device.isOk());
  auto* bytes = static_cast<volatile std::uint8_t*>(*device);
  CHECK(runtime.probe(*device).kind == MemoryProbe::Kind::kCuda);
  // What a CPU access to GPU memory does on a GPU: a segfault, read or write.
  CHECK(signalOfChild([&] { (void)bytes[100]; }) == SIGSEGV);
  CHECK(signalOfChild([&] { bytes[kBytes - 1] = 1; }) == SIGSEGV);

  // The copy engine reaches the same bytes: host -> device -> device -> host.
  auto engine = runtime.createCopyEngine(CopyEngineOptions{});
  REQUIRE(engine.isOk());
  auto other = runtime.allocateDevice(kBytes, 0);
  REQUIRE(other.isOk());
  std::vector<std::uint8_t> in(kBytes), out(kBytes, 0);
  for (std::size_t i = 0; i < kBytes; ++i) in[i] = static_cast<std::uint8_t>(i * 7 + 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  CHECK(CopyTicket::start(**engine, {*device, in.data(), kBytes, CopyKind::kHostToDevice})
            ->wait(deadline)
            .isOk());
  CHECK(CopyTicket::start(**engine, {*other, *device, kBytes, CopyKind::kDeviceToDevice})
            ->wait(deadline)
            .isOk());
  CHECK(CopyTicket::start(**engine, {out.data(), *other, kBytes, CopyKind::kDeviceToHost})
            ->wait(deadline)
            .isOk());
  CHECK(out == in);
  // Offsets inside an allocation map to the same offsets of its copy-engine view.
  std::vector<std::uint8_t> middle(10);
  CHECK(CopyTicket::start(**engine, {middle.data(), static_cast<std::uint8_t*>(*other) + 5000,
                                     middle.size(), CopyKind::kDeviceToHost})
            ->wait(deadline)
            .isOk());
  CHECK(std::equal(middle.begin(), middle.end(), in.begin() + 5000));
  CHECK(runtime.freeDevice(*device).isOk());
  CHECK(runtime.freeDevice(*other).isOk());
  CHECK(runtime.probe(*device).kind == MemoryProbe::Kind::kHost);
}

TEST_CASE(
    "fake GPU runtime: pinning is counted; pinned memory is found pinned, a partial overlap "
    "refused",
    "[staged]") {
  FakeGpuRuntime gpu;
  std::vector<std::uint8_t> memory(8192);
  auto pinned = gpu.pinHost(memory.data(), 4096);
  REQUIRE(pinned.isOk());
  CHECK(*pinned == HostPinning::kPinned);
  CHECK(gpu.pinnedHostBytes() == 4096);

  auto again = gpu.pinHost(memory.data() + 1024, 1024);  // inside: pinned by someone else
  REQUIRE(again.isOk());
  CHECK(*again == HostPinning::kAlreadyPinned);
  CHECK(gpu.pinnedHostBytes() == 4096);
  // Across the end of the pinned range, as cudaHostRegister refuses it.
  CHECK(gpu.pinHost(memory.data() + 2048, 4096).status().code() == StatusCode::kFailedPrecondition);
  CHECK(gpu.pinHost(memory.data(), 0).status().code() == StatusCode::kInvalidArgument);

  gpu.unpinHost(memory.data());
  CHECK(gpu.pinnedHostBytes() == 0);
}
