// kvx-test-labels: unit
// The socket transport moving GPU memory through a copy engine, on the strict fake GPU
// runtime: its device memory faults on any CPU access, so these tests fail (SIGSEGV) if the
// transport reads or writes a device pointer itself. Puts and gets between host and device
// memory in every combination, every byte compared (through the copy engine); a failed copy
// answers that operation with an error naming the copy and the device, and the connection
// goes on; without a device, GPU memory is refused with the reason.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpu/copy_ticket.h"
#include "engine/gpu/fake_gpu_runtime.h"
#include "engine/transport/completion.h"
#include "engine/transport/endpoint.h"
#include "engine/transport/transport_registry.h"

using namespace kvx;
using namespace kvx::engine;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint64_t kBytes = 3 * 65536 + 123;

class Done final : public Completion {
 public:
  void onComplete(Status s) override {
    status = std::move(s);
    fired.store(true);
  }
  std::atomic<bool> fired{false};
  Status status;
};

std::uint8_t patternByte(std::uint64_t i, std::uint64_t seed) {
  return static_cast<std::uint8_t>((i * 131 + seed * 17 + (i >> 9)) & 0xff);
}

// Memory of one side: host bytes, or strict fake device memory reached only by copies.
struct Side {
  std::shared_ptr<gpu::FakeGpuRuntime> runtime;
  bool onDevice = false;
  std::vector<std::uint8_t> host;
  void* device = nullptr;
  std::unique_ptr<TransportMemory> memory;

  std::uint8_t* address() { return onDevice ? static_cast<std::uint8_t*>(device) : host.data(); }

  void write(const std::vector<std::uint8_t>& bytes) {
    if (!onDevice) {
      host = bytes;
      return;
    }
    auto engine = runtime->createCopyEngine({}).value();
    const Status copied = gpu::CopyTicket::start(*engine, {device, bytes.data(), bytes.size(),
                                                           gpu::CopyKind::kHostToDevice})
                              ->wait(Clock::now() + 5s);
    REQUIRE(copied.isOk());
  }
  std::vector<std::uint8_t> read() {
    if (!onDevice) return host;
    std::vector<std::uint8_t> out(kBytes);
    auto engine = runtime->createCopyEngine({}).value();
    const Status copied = gpu::CopyTicket::start(*engine, {out.data(), device, out.size(),
                                                           gpu::CopyKind::kDeviceToHost})
                              ->wait(Clock::now() + 5s);
    REQUIRE(copied.isOk());
    return out;
  }
};

struct GpuLink {
  std::shared_ptr<gpu::FakeGpuRuntime> runtime = std::make_shared<gpu::FakeGpuRuntime>(
      1, gpu::FakeCopyOptions{}, "test", gpu::FakeDeviceAccess::kCopyEngineOnly);
  std::unique_ptr<Transport> a;
  std::unique_ptr<Transport> b;
  Side local;
  Side remote;
  std::shared_ptr<Endpoint> endpoint;
  std::unique_ptr<RemoteKey> key;

  GpuLink(bool localOnDevice, bool remoteOnDevice) {
    a = make("gpu-a");
    b = make("gpu-b");
    local = side(*a, localOnDevice);
    remote = side(*b, remoteOnDevice);
    endpoint = a->connect(b->localAddress(), [](const Status&) {}).value();
    key = endpoint
              ->unpackRemoteKey(remote.memory->packedRemoteKey(),
                                remoteOnDevice ? MemoryKind::kCuda : MemoryKind::kHost)
              .value();
  }
  ~GpuLink() {
    key.reset();
    if (endpoint) {
      std::atomic<bool> stop{false};
      std::thread driver([&] {
        while (!stop.load()) b->progress();
      });
      endpoint->close(false);
      stop.store(true);
      driver.join();
    }
    endpoint.reset();
    local.memory.reset();
    remote.memory.reset();
    b.reset();
    a.reset();
    for (Side* s : {&local, &remote}) {
      if (s->device != nullptr) REQUIRE(runtime->freeDevice(s->device).isOk());
    }
  }

  std::unique_ptr<Transport> make(const std::string& name) {
    TransportOptions options;
    options.agentName = name;
    options.netDevices = "lo";
    options.gpuRuntime = runtime;
    auto transport = createTransport("socket", options);
    REQUIRE(transport.isOk());
    return std::move(transport).value();
  }

  Side side(Transport& transport, bool onDevice) {
    Side s;
    s.runtime = runtime;
    s.onDevice = onDevice;
    if (onDevice) {
      s.device = runtime->allocateDevice(kBytes, 0).value();
    } else {
      s.host.assign(kBytes, 0);
    }
    auto memory = transport.registerMemory(
        s.address(), kBytes, onDevice ? MemoryKind::kCuda : MemoryKind::kHost, onDevice ? 0 : -1);
    INFO(memory.status().toString());
    REQUIRE(memory.isOk());
    s.memory = std::move(memory).value();
    return s;
  }

  RmaOp op() {
    RmaOp rma;
    rma.localAddress = local.address();
    rma.localMemory = local.memory.get();
    rma.remoteAddress = reinterpret_cast<std::uint64_t>(remote.address());
    rma.remoteKey = key.get();
    rma.length = kBytes;
    return rma;
  }

  Status run(bool write) {
    Done done;
    if (write) {
      endpoint->put(op(), &done);
    } else {
      endpoint->get(op(), &done);
    }
    const auto deadline = Clock::now() + 10s;
    while (!done.fired.load()) {
      if (Clock::now() >= deadline) FAIL("the operation did not complete in 10 s");
      a->progress();
      b->progress();
    }
    return done.status;
  }
};

std::vector<std::uint8_t> pattern(std::uint64_t seed) {
  std::vector<std::uint8_t> bytes(kBytes);
  for (std::uint64_t i = 0; i < kBytes; ++i) bytes[i] = patternByte(i, seed);
  return bytes;
}

}  // namespace

TEST_CASE(
    "socket: puts and gets between host and GPU memory move every byte, the CPU never "
    "touching the device",
    "[socket][gpu_memory]") {
  const bool localOnDevice = GENERATE(false, true);
  const bool remoteOnDevice = GENERATE(false, true);
  const bool write = GENERATE(true, false);
  if (!localOnDevice && !remoteOnDevice) return;  // host to host: the conformance suite
  CAPTURE(localOnDevice, remoteOnDevice, write);
  GpuLink link(localOnDevice, remoteOnDevice);
  CHECK(link.a->supportsMemoryKind(MemoryKind::kCuda));

  const std::vector<std::uint8_t> bytes = pattern(write ? 1 : 2);
  Side& source = write ? link.local : link.remote;
  Side& destination = write ? link.remote : link.local;
  source.write(bytes);
  const Status status = link.run(write);
  INFO(status.toString());
  REQUIRE(status.isOk());
  CHECK(destination.read() == bytes);
}

TEST_CASE(
    "socket: a failed copy fails that operation with the copy and the device, and the "
    "connection goes on",
    "[socket][gpu_memory]") {
  const bool write = GENERATE(true, false);
  CAPTURE(write);
  GpuLink link(/*localOnDevice=*/false, /*remoteOnDevice=*/true);
  gpu::FakeCopyEngine& copies = link.runtime->copyEngine(0);
  copies.failCopy(copies.copiesSubmitted(),
                  Status(StatusCode::kInternal, "injected: cudaErrorIllegalAddress"));
  const Status failed = link.run(write);
  CHECK(failed.code() == StatusCode::kInternal);
  CHECK_THAT(failed.message(), Catch::Contains("injected: cudaErrorIllegalAddress") &&
                                   Catch::Contains("GPU 0") && Catch::Contains("socket"));
  CHECK_FALSE(link.endpoint->failed());

  const std::vector<std::uint8_t> bytes = pattern(3);
  (write ? link.local : link.remote).write(bytes);
  REQUIRE(link.run(write).isOk());
  CHECK((write ? link.remote : link.local).read() == bytes);
}

TEST_CASE("socket: without a GPU runtime or device, GPU memory is refused with the reason",
          "[socket][gpu_memory]") {
  TransportOptions options;
  options.agentName = "no-gpu";
  options.netDevices = "lo";
  SECTION("no runtime") {}
  SECTION("a runtime without devices") {
    options.gpuRuntime = std::make_shared<gpu::FakeGpuRuntime>(0);
  }
  auto transport = createTransport("socket", options).value();
  CHECK_FALSE(transport->supportsMemoryKind(MemoryKind::kCuda));
  const std::string why = transport->whyNotMemoryKind(MemoryKind::kCuda);
  CHECK_THAT(why, Catch::Contains("socket transport"));
  std::vector<std::uint8_t> bytes(4096);
  auto refused = transport->registerMemory(bytes.data(), bytes.size(), MemoryKind::kCuda, 0);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().message() == why);
  CHECK_FALSE(transport->allocateMemory(4096, MemoryKind::kCuda, 0).isOk());
}
