// kvx-test-labels: unit
// AgentOptions::gpuPath in the engine (EngineOptions::gpuPath): direct refuses GPU memory the
// transport cannot move, with the transport's reason; auto and staged stage it; staged keeps
// GPU memory away from a transport that could move it. Also the per-peer description of how
// GPU memory moves, and host copies into and out of regions. FakeGpuRuntime throughout:
// "device memory" is host memory.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/gpu/fake_gpu_runtime.h"
#include "engine/memory/staged_only_memory.h"
#include "engine/transport/transport_registry.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kPathBytes = 256 << 10;

std::unique_ptr<Engine> makeGpuPathEngine(const std::string& name,
                                          std::shared_ptr<gpu::FakeGpuRuntime> runtime,
                                          GpuPath path, std::uint32_t windowSlots = 2) {
  EngineOptions options;
  options.name = name;
  options.transport = "inproc";
  options.gpuRuntime = std::move(runtime);
  options.gpuPath = path;
  options.staging.chunkBytes = 64 << 10;
  options.staging.buffers = 2;
  options.staging.windowSlots = windowSlots;
  auto engine = Engine::create(options);
  REQUIRE(engine.isOk());
  return std::move(engine).value();
}

// The inproc transport, claiming to move CUDA memory: fake device memory is host memory, so
// it registers it as host memory. Stands for a UCX built with CUDA.
class CudaCapableTransport final : public Transport {
 public:
  CudaCapableTransport() : inner_(std::move(createTransport("inproc", {}).value())) {}
  std::string_view name() const override { return inner_->name(); }
  std::vector<std::uint8_t> localAddress() const override { return inner_->localAddress(); }
  bool supportsMemoryKind(MemoryKind) const override { return true; }
  Result<std::unique_ptr<TransportMemory>> registerMemory(void* address, std::uint64_t length,
                                                          MemoryKind, int device) override {
    ++registrations;
    return inner_->registerMemory(address, length, MemoryKind::kHost, device);
  }
  Result<std::unique_ptr<TransportMemory>> allocateMemory(std::uint64_t length, MemoryKind,
                                                          int device) override {
    ++registrations;
    return inner_->allocateMemory(length, MemoryKind::kHost, device);
  }
  Result<std::shared_ptr<Endpoint>> connect(std::span<const std::uint8_t> address,
                                            EndpointErrorHandler onError) override {
    return inner_->connect(address, std::move(onError));
  }
  void setMessageHandler(MessageHandler handler) override {
    inner_->setMessageHandler(std::move(handler));
  }
  bool progress() override { return inner_->progress(); }
  int eventFd() const override { return inner_->eventFd(); }
  bool arm() override { return inner_->arm(); }
  void wake() override { inner_->wake(); }

  int registrations = 0;

 private:
  std::unique_ptr<Transport> inner_;
};

}  // namespace

TEST_CASE("gpu path direct refuses GPU memory the transport cannot move, saying why",
          "[engine][gpu_path]") {
  auto runtime = std::make_shared<gpu::FakeGpuRuntime>();
  auto engine = makeGpuPathEngine("a", runtime, GpuPath::kDirect);
  const std::string why = engine->gpuReach().whyNotCuda;
  REQUIRE_FALSE(why.empty());
  CHECK_THAT(why, Catch::Contains("inproc"));
  CHECK_THAT(describeGpuDirect(engine->gpuReach()),
             Catch::StartsWith("GPUDirect: off, and GPU memory is refused (gpu path 'direct')"));

  auto allocated = engine->allocateMemory({"a.gpu", kPathBytes, MemoryKind::kCuda, 0, true});
  REQUIRE_FALSE(allocated.isOk());
  CHECK(allocated.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(allocated.status().message(), Catch::StartsWith("allocating region 'a.gpu': "));
  CHECK_THAT(allocated.status().message(), Catch::Contains("gpu path 'direct'"));
  CHECK_THAT(allocated.status().message(), Catch::Contains(why));

  void* device = runtime->allocateDevice(kPathBytes, 0).value();
  auto registered = engine->registerMemory({"b.gpu", device, kPathBytes, MemoryKind::kCuda, 0});
  REQUIRE_FALSE(registered.isOk());
  CHECK(registered.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(registered.status().message(), Catch::StartsWith("registering region 'b.gpu': "));
  CHECK_THAT(registered.status().message(), Catch::Contains(why));
  CHECK(runtime->freeDevice(device).isOk());

  // Host memory is not affected.
  std::vector<std::uint8_t> host(kPathBytes);
  CHECK(engine->registerMemory({"a.host", host.data(), host.size()}).isOk());
}

TEST_CASE("gpu paths auto and staged stage GPU memory over inproc", "[engine][gpu_path]") {
  const GpuPath path = GENERATE(GpuPath::kAuto, GpuPath::kStaged);
  CAPTURE(toString(path));
  auto runtimeA = std::make_shared<gpu::FakeGpuRuntime>();
  auto runtimeB = std::make_shared<gpu::FakeGpuRuntime>();
  auto a = makeGpuPathEngine("a", runtimeA, path);
  auto b = makeGpuPathEngine("b", runtimeB, GpuPath::kAuto);
  CHECK_FALSE(a->gpuReach().cudaDirect);

  auto device = a->allocateMemory({"a.gpu", kPathBytes, MemoryKind::kCuda, 0, true});
  REQUIRE(device.isOk());
  std::vector<std::uint8_t> host(kPathBytes);
  const RegionId hostB = b->registerMemory({"b.host", host.data(), host.size()}).value();
  auto* bytes = static_cast<std::uint8_t*>(device->address);
  for (std::size_t i = 0; i < kPathBytes; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);

  // Published without a transport key: only a can move it.
  for (const RegionMetadata& region : a->localMetadata().regions) {
    if (region.info.kind == MemoryKind::kCuda) CHECK(region.packedKey.empty());
  }
  REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
  REQUIRE(b->addOrUpdatePeer(a->localMetadata()).isOk());

  TransferRequest request;
  request.peer = "b";
  request.op = TransferOp::kWrite;
  request.segments = {TransferSegment{{device->id, 0, kPathBytes}, {hostB, 0, kPathBytes}}};
  auto id = a->createTransfer(request);
  REQUIRE(id.isOk());
  REQUIRE(a->post(*id).isOk());
  REQUIRE(a->wait(*id, deadlineIn(5s)).isOk());
  CHECK(a->stats(*id)->stagedOperations > 0);
  CHECK(a->stats(*id)->stagedBytes == kPathBytes);
  CHECK(std::memcmp(host.data(), bytes, kPathBytes) == 0);
}

TEST_CASE("gpu path staged keeps GPU memory from a transport that could move it",
          "[engine][gpu_path]") {
  gpu::FakeGpuRuntime runtime;
  CudaCapableTransport transport;
  const auto isStaged = [](const LocalRegion& region) {
    return dynamic_cast<const StagedOnlyMemory*>(region.memory.get()) != nullptr;
  };
  for (GpuPath path : {GpuPath::kAuto, GpuPath::kDirect, GpuPath::kStaged}) {
    CAPTURE(toString(path));
    MemoryRegistry registry(transport, runtime, path);
    transport.registrations = 0;
    auto allocated = registry.allocate({"gpu", kPathBytes, MemoryKind::kCuda, 0, true});
    REQUIRE(allocated.isOk());
    void* device = runtime.allocateDevice(kPathBytes, 0).value();
    auto registered = registry.add({"wrapped", device, kPathBytes, MemoryKind::kCuda, 0});
    REQUIRE(registered.isOk());
    const bool expectStaged = path == GpuPath::kStaged;
    CHECK(isStaged(*registry.find(allocated->id).value()) == expectStaged);
    CHECK(isStaged(*registry.find(*registered).value()) == expectStaged);
    CHECK(transport.registrations == (expectStaged ? 0 : 2));
    REQUIRE(registry.remove(*registered).isOk());
    CHECK(runtime.freeDevice(device).isOk());
  }
  // And the engine's data paths follow: staged is not direct, whatever the transport.
  CHECK(gpuReachOf(transport.supportsMemoryKind(MemoryKind::kCuda), "", GpuPath::kAuto).cudaDirect);
  CHECK_FALSE(
      gpuReachOf(transport.supportsMemoryKind(MemoryKind::kCuda), "", GpuPath::kStaged).cudaDirect);
}

TEST_CASE("direct GPU memory is the runtime's, registered after and freed after deregistering",
          "[engine][gpu_path]") {
  gpu::FakeGpuRuntime runtime;
  CudaCapableTransport transport;
  MemoryRegistry registry(transport, runtime, GpuPath::kAuto);
  CHECK(registry.directCudaDevice()->load() == -1);
  auto allocated = registry.allocate({"gpu", kPathBytes, MemoryKind::kCuda, 0, true});
  REQUIRE(allocated.isOk());
  CHECK(transport.registrations == 1);
  // The runtime allocated it (UCX 1.13 cannot allocate CUDA memory on a thread without a
  // context), and the transport's own registration sits inside the region's memory.
  CHECK(runtime.probe(allocated->address).kind == gpu::MemoryProbe::Kind::kCuda);
  {
    const auto region = registry.find(allocated->id).value();  // holds the region: let go
    CHECK(&region->memory->registration() != region->memory.get());
    CHECK(region->memory->address() == allocated->address);
  }
  // The first direct CUDA region names the device whose context the transport's threads use.
  CHECK(registry.directCudaDevice()->load() == 0);
  REQUIRE(registry.remove(allocated->id).isOk());
  // Freed with the region: the runtime no longer knows the address.
  CHECK_FALSE(runtime.freeDevice(allocated->address).isOk());
}

TEST_CASE(
    "GPU memory on a device the process cannot see is refused, naming the region and "
    "the device",
    "[engine][gpu_path]") {
  const GpuPath path = GENERATE(GpuPath::kAuto, GpuPath::kStaged);
  CAPTURE(toString(path));
  auto runtime = std::make_shared<gpu::FakeGpuRuntime>(2);  // devices 0 and 1
  auto engine = makeGpuPathEngine("a", runtime, path);
  auto refused = engine->allocateMemory({"kv.far", kPathBytes, MemoryKind::kCuda, 7, true});
  REQUIRE_FALSE(refused.isOk());
  CHECK_THAT(refused.status().message(), Catch::Contains("kv.far") && Catch::Contains("7"));
  // Nothing was kept: the name is free and a visible device works.
  auto allocated = engine->allocateMemory({"kv.far", kPathBytes, MemoryKind::kCuda, 1, true});
  INFO(allocated.status().toString());
  CHECK(allocated.isOk());
}

TEST_CASE("the data path per peer says how GPU memory moves", "[engine][gpu_path]") {
  auto runtimeA = std::make_shared<gpu::FakeGpuRuntime>();
  auto runtimeB = std::make_shared<gpu::FakeGpuRuntime>();
  std::vector<std::uint8_t> hostA(kPathBytes), hostB(kPathBytes);

  SECTION("host memory only") {
    auto a = makeGpuPathEngine("a", runtimeA, GpuPath::kAuto);
    auto b = makeGpuPathEngine("b", runtimeB, GpuPath::kAuto);
    REQUIRE(a->registerMemory({"a.host", hostA.data(), kPathBytes}).isOk());
    REQUIRE(b->registerMemory({"b.host", hostB.data(), kPathBytes}).isOk());
    REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
    CHECK(a->dataPathDescription("b").value() == "inproc/memcpy; no GPU memory on either side");
    CHECK(a->dataPathDescription("c").status().code() == StatusCode::kNotFound);
  }
  SECTION("staged on this side") {
    auto a = makeGpuPathEngine("a", runtimeA, GpuPath::kAuto);
    auto b = makeGpuPathEngine("b", runtimeB, GpuPath::kAuto);
    REQUIRE(a->allocateMemory({"a.gpu", kPathBytes, MemoryKind::kCuda, 0, false}).isOk());
    REQUIRE(b->registerMemory({"b.host", hostB.data(), kPathBytes}).isOk());
    REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
    CHECK(a->dataPathDescription("b").value() ==
          "inproc/memcpy; GPU memory: staged through host (" + a->gpuReach().whyNotCuda +
              "); peer's GPU memory: none exposed");
  }
  SECTION("through the peer's staging window, or not at all without one") {
    const std::uint32_t slots = GENERATE(0u, 2u);
    auto a = makeGpuPathEngine("a", runtimeA, GpuPath::kAuto);
    auto b = makeGpuPathEngine("b", runtimeB, GpuPath::kAuto, slots);
    REQUIRE(a->registerMemory({"a.host", hostA.data(), kPathBytes}).isOk());
    REQUIRE(b->allocateMemory({"b.gpu", kPathBytes, MemoryKind::kCuda, 0, true}).isOk());
    REQUIRE(a->addOrUpdatePeer(b->localMetadata()).isOk());
    REQUIRE(b->addOrUpdatePeer(a->localMetadata()).isOk());
    CHECK(a->dataPathDescription("b").value() ==
          (slots != 0 ? "inproc/memcpy; GPU memory: none here; peer's GPU memory: through its "
                        "staging window"
                      : "inproc/memcpy; GPU memory: none here; peer's GPU memory: not "
                        "reachable: the peer stages it but publishes no staging window"));
    CHECK(b->dataPathDescription("a").value() ==
          "inproc/memcpy; GPU memory: staged through host (" + b->gpuReach().whyNotCuda +
              "); peer's GPU memory: none exposed");
  }
}

TEST_CASE("host copies into and out of host and GPU regions", "[engine][gpu_path]") {
  auto runtime = std::make_shared<gpu::FakeGpuRuntime>();
  auto engine = makeGpuPathEngine("a", runtime, GpuPath::kAuto);
  std::vector<std::byte> host(kPathBytes);
  const RegionId hostRegion = engine->registerMemory({"a.host", host.data(), kPathBytes}).value();
  auto device = engine->allocateMemory({"a.gpu", kPathBytes, MemoryKind::kCuda, 0, true});
  REQUIRE(device.isOk());
  const auto* deviceBytes = static_cast<const std::byte*>(device->address);

  std::vector<std::byte> in(4096), out(4096);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i * 13 + 1);

  REQUIRE(engine->copyIntoRegion(hostRegion, 1000, in, deadlineIn(5s)).isOk());
  CHECK(std::memcmp(host.data() + 1000, in.data(), in.size()) == 0);
  REQUIRE(engine->copyFromRegion(hostRegion, 1000, out, deadlineIn(5s)).isOk());
  CHECK(std::memcmp(out.data(), in.data(), in.size()) == 0);

  std::fill(out.begin(), out.end(), std::byte{0});
  const std::uint64_t copiesBefore = runtime->copyEngine(0).copiesSucceeded();
  REQUIRE(engine->copyIntoRegion(device->id, 8192, in, deadlineIn(5s)).isOk());
  CHECK(std::memcmp(deviceBytes + 8192, in.data(), in.size()) == 0);
  REQUIRE(engine->copyFromRegion(device->id, 8192, out, deadlineIn(5s)).isOk());
  CHECK(std::memcmp(out.data(), in.data(), in.size()) == 0);
  CHECK(runtime->copyEngine(0).copiesSucceeded() == copiesBefore + 2);  // not memcpy'd here

  const Status outside = engine->copyIntoRegion(device->id, kPathBytes - 100, in, deadlineIn(5s));
  CHECK(outside.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(outside.message(), Catch::Contains("region 'a.gpu' at offset"));
  CHECK(engine->copyFromRegion(RegionId(999), 0, out, deadlineIn(5s)).code() ==
        StatusCode::kNotFound);

  // A copy the device does not finish in time: TIMED_OUT, and the region stays pinned
  // until it has landed.
  runtime->copyEngine(0).pause();
  const Status late = engine->copyFromRegion(device->id, 0, out, deadlineIn(50ms));
  CHECK(late.code() == StatusCode::kTimedOut);
  CHECK(engine->deregisterMemory(device->id).code() == StatusCode::kFailedPrecondition);
  runtime->copyEngine(0).resume();
  Status removed = failedPrecondition("not tried");
  for (int i = 0; i < 500 && !removed.isOk(); ++i) {
    removed = engine->deregisterMemory(device->id);
    if (!removed.isOk()) std::this_thread::sleep_for(10ms);
  }
  CHECK(removed.isOk());
}
