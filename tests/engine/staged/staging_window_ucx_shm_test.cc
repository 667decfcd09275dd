// kvx-test-labels: ucx
// The staging window over UCX on shared memory: its memory is the transport's, pinned, so
// that a peer's put into a slot completes without this side progressing (one-sided). On
// memory UCX only registered, UCX 1.13 over sm emulates the put with active messages that
// the window's side must progress and copy (UCX-NOTES.md): the put would not complete here.
#include "engine/gpu/fake_gpu_runtime.h"
#include "engine/staged/staging_window.h"
#include "tests/engine/transport/transport_conformance_support.h"

namespace kvx::test {

ConformanceConfig conformanceConfig() {
  ConformanceConfig config;
  config.transport = "ucx";
  config.options.transports = "shm";
  config.detectsPeerLoss = false;
  return config;
}

namespace conformance {

TEST_CASE("staging window: peers put into its slots without this side progressing", "[staged]") {
  constexpr std::uint32_t kSlots = 2;
  constexpr std::uint64_t kSlotBytes = 1u << 20;
  engine::gpu::FakeGpuRuntime gpu;
  Link link;
  // The endpoint's wire-up, with both sides progressing.
  CountingCompletion warm;
  link.endpoint->put(link.op(0, 0, 4096), &warm);
  link.endpoint->flush(&warm);
  link.await(warm, 2, "a first put over the link");

  auto made = engine::StagingWindow::create(*link.b, gpu, kSlots, kSlotBytes);
  INFO(made.status().toString());
  REQUIRE(made.isOk());
  std::unique_ptr<engine::StagingWindow> window = std::move(made).value();
  INFO("layout: " << window->layout());
  CHECK(window->layout() == "allocated by the transport, pinned");
  CHECK(gpu.pinnedHostBytes() == kSlots * kSlotBytes);

  const engine::StagingWindowMetadata metadata = window->metadata();
  auto key = link.unpack(metadata.packedKey);
  fillPattern(link.local.span(0, kSlotBytes), 41);
  engine::RmaOp op;
  op.localAddress = link.local.data();
  op.localMemory = link.local.memory.get();
  op.remoteAddress = metadata.address + kSlotBytes;  // slot 1
  op.remoteKey = key.get();
  op.length = kSlotBytes;
  CountingCompletion written;
  link.endpoint->put(op, &written);
  link.endpoint->flush(&written);
  // Only the initiator progresses.
  conformance::progressUntil(
      {link.a.get()}, [&] { return written.count() >= 2; },
      "a put into the window while its side does not progress", 3000ms);
  REQUIRE(written.errors() == 0);
  CHECK(checkPattern(std::span<const std::uint8_t>(
                         reinterpret_cast<const std::uint8_t*>(window->slot(1)), kSlotBytes),
                     41)
            .empty());

  key.reset();
  window.reset();
  CHECK(gpu.pinnedHostBytes() == 0);
}

// A GPU runtime in a process whose transport pins what it allocates (a UCX built with CUDA
// registers its host memory with CUDA): the first pin of a range is the transport's.
class TransportPinsItsMemory : public engine::gpu::FakeGpuRuntime {
 public:
  Result<engine::gpu::HostPinning> pinHost(void* address, std::size_t bytes) override {
    if (!transportPinned_) {
      transportPinned_ = address;
      KVX_RETURN_IF_ERROR(FakeGpuRuntime::pinHost(address, bytes).status());
    }
    return FakeGpuRuntime::pinHost(address, bytes);
  }
  void* transportPinned_ = nullptr;
};

TEST_CASE("staging window: memory the transport pinned is used as it is and left pinned",
          "[staged]") {
  constexpr std::uint64_t kBytes = 2 * (64u << 10);
  TransportPinsItsMemory gpu;
  Link link;
  auto made = engine::StagingWindow::create(*link.b, gpu, 2, 64u << 10);
  INFO(made.status().toString());
  REQUIRE(made.isOk());
  std::unique_ptr<engine::StagingWindow> window = std::move(made).value();
  CHECK(window->layout() == "allocated and pinned by the transport");
  CHECK(window->slot(0) == gpu.transportPinned_);
  window.reset();
  // Not the window's pin to undo: the transport's stays until the transport undoes it.
  CHECK(gpu.pinnedHostBytes() == kBytes);
  gpu.unpinHost(gpu.transportPinned_);
}

TEST_CASE("staging window: pinned memory, registered, where the transport's cannot be pinned",
          "[staged]") {
  engine::gpu::FakeGpuRuntime gpu;
  gpu.failPinning(transportError("cudaHostRegister: not supported on this mapping"));
  Link link;
  auto made = engine::StagingWindow::create(*link.b, gpu, 2, 64u << 10);
  INFO(made.status().toString());
  REQUIRE(made.isOk());
  std::unique_ptr<engine::StagingWindow> window = std::move(made).value();
  CHECK_THAT(window->layout(),
             Catch::StartsWith("pinned memory registered with the transport (") &&
                 Catch::Contains("cudaHostRegister: not supported on this mapping"));
  CHECK(gpu.pinnedHostBytes() == 0);

  // Still a window peers can put into (with its side progressing).
  const engine::StagingWindowMetadata metadata = window->metadata();
  auto key = link.unpack(metadata.packedKey);
  fillPattern(link.local.span(0, 4096), 43);
  engine::RmaOp op;
  op.localAddress = link.local.data();
  op.localMemory = link.local.memory.get();
  op.remoteAddress = metadata.address;
  op.remoteKey = key.get();
  op.length = 4096;
  CountingCompletion written;
  link.endpoint->put(op, &written);
  link.endpoint->flush(&written);
  link.await(written, 2, "a put into the registered window");
  CHECK(checkPattern(std::span<const std::uint8_t>(
                         reinterpret_cast<const std::uint8_t*>(window->slot(0)), 4096),
                     43)
            .empty());
}

}  // namespace conformance
}  // namespace kvx::test
