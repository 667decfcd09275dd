// kvx-test-labels: unit
#include "engine/gpu/memory_probe.h"

#include <catch2/catch.hpp>
#include <vector>

#include "engine/gpu/gpu_runtime.h"

using namespace kvx;
using namespace kvx::engine::gpu;

namespace {

// A prober that sees [cudaBegin, cudaEnd) as device memory of `device` and the rest as host.
MemoryProber fakeProber(const std::byte* cudaBegin, const std::byte* cudaEnd, int device,
                        MemoryProbe::Kind kind = MemoryProbe::Kind::kCuda) {
  return [=](const void* address) {
    const auto* at = static_cast<const std::byte*>(address);
    if (at >= cudaBegin && at < cudaEnd) return MemoryProbe{kind, device, "fake: device"};
    return MemoryProbe{MemoryProbe::Kind::kHost, -1, "fake: host"};
  };
}

}  // namespace

TEST_CASE("a declaration that matches the memory is accepted", "[memory_probe]") {
  std::vector<std::byte> memory(1000);
  const std::byte* begin = memory.data();
  const MemoryProber probe = fakeProber(begin + 500, begin + 1000, 1);
  CHECK(checkDeclaredKind(begin, 500, MemoryKind::kHost, -1, probe).isOk());
  CHECK(checkDeclaredKind(begin + 500, 500, MemoryKind::kCuda, 1, probe).isOk());
  CHECK(checkDeclaredKind(begin + 600, 1, MemoryKind::kCuda, 1, probe).isOk());
  CHECK(checkDeclaredKind(begin + 600, 0, MemoryKind::kCuda, 1, probe).isOk());
}

TEST_CASE("CUDA declared over host memory, or host over CUDA, says what was found",
          "[memory_probe]") {
  std::vector<std::byte> memory(1000);
  const std::byte* begin = memory.data();
  const MemoryProber probe = fakeProber(begin + 500, begin + 1000, 1);

  const Status cudaOnHost = checkDeclaredKind(begin, 100, MemoryKind::kCuda, 1, probe);
  REQUIRE(cudaOnHost.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(cudaOnHost.message(), Catch::Contains("declared CUDA memory of device 1"));
  CHECK_THAT(cudaOnHost.message(), Catch::Contains("first byte is host memory (fake: host)"));
  CHECK_THAT(cudaOnHost.message(), Catch::Contains("declare it MemoryKind::kHost"));
  CHECK_THAT(cudaOnHost.message(), Catch::Contains("+100)"));

  const Status hostOnCuda = checkDeclaredKind(begin + 500, 100, MemoryKind::kHost, -1, probe);
  REQUIRE(hostOnCuda.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(hostOnCuda.message(), Catch::Contains("declared host memory"));
  CHECK_THAT(hostOnCuda.message(), Catch::Contains("is CUDA memory of device 1"));
  CHECK_THAT(hostOnCuda.message(), Catch::Contains("MemoryKind::kCuda with device 1"));
}

TEST_CASE("the wrong device, and a range that leaves the device memory, are refused",
          "[memory_probe]") {
  std::vector<std::byte> memory(1000);
  const std::byte* begin = memory.data();
  const MemoryProber probe = fakeProber(begin + 500, begin + 1000, 1);
  const Status wrongDevice = checkDeclaredKind(begin + 500, 10, MemoryKind::kCuda, 0, probe);
  REQUIRE(wrongDevice.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(wrongDevice.message(), Catch::Contains("declared CUDA memory of device 0"));
  CHECK_THAT(wrongDevice.message(), Catch::Contains("declare device 1"));
  const Status spans = checkDeclaredKind(begin + 400, 200, MemoryKind::kCuda, 1, probe);
  REQUIRE(spans.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(spans.message(), Catch::Contains("first byte is host memory"));
  const Status tail = checkDeclaredKind(begin + 900, 200, MemoryKind::kCuda, 1, probe);
  REQUIRE(tail.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(tail.message(), Catch::Contains("last byte is host memory"));
}

TEST_CASE("managed memory passes as host memory and as memory of its device", "[memory_probe]") {
  std::vector<std::byte> memory(100);
  const std::byte* begin = memory.data();
  const MemoryProber probe = fakeProber(begin, begin + 100, 0, MemoryProbe::Kind::kManaged);
  CHECK(checkDeclaredKind(begin, 100, MemoryKind::kHost, -1, probe).isOk());
  CHECK(checkDeclaredKind(begin, 100, MemoryKind::kCuda, 0, probe).isOk());
  CHECK_FALSE(checkDeclaredKind(begin, 100, MemoryKind::kCuda, 2, probe).isOk());
}

TEST_CASE("a runtime that cannot tell accepts host memory and refuses CUDA memory",
          "[memory_probe]") {
  std::vector<std::byte> memory(100);
  const MemoryProber unknown = [](const void*) {
    return MemoryProbe{MemoryProbe::Kind::kUnknown, -1, "kvx was built without CUDA"};
  };
  CHECK(checkDeclaredKind(memory.data(), 100, MemoryKind::kHost, -1, unknown).isOk());
  const Status cuda = checkDeclaredKind(memory.data(), 100, MemoryKind::kCuda, 0, unknown);
  REQUIRE(cuda.code() == StatusCode::kUnimplemented);
  CHECK_THAT(cuda.message(), Catch::Contains("kvx was built without CUDA"));
  CHECK(checkDeclaredKind(nullptr, 100, MemoryKind::kHost, -1, unknown).code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("host memory probed through this build's runtime", "[memory_probe]") {
  std::vector<std::byte> memory(4096);
  const MemoryProbe probe = probeMemory(memory.data());
  INFO("runtime: " << gpuRuntime().describe() << "; probe: " << probe.detail);
  if (gpuRuntime().compiledIn()) {
    CHECK(probe.kind == MemoryProbe::Kind::kHost);
    CHECK(checkDeclaredKind(memory.data(), 4096, MemoryKind::kHost, -1).isOk());
    CHECK(checkDeclaredKind(memory.data(), 4096, MemoryKind::kCuda, 0).code() ==
          StatusCode::kFailedPrecondition);
  } else {
    CHECK(probe.kind == MemoryProbe::Kind::kUnknown);
    CHECK_THAT(probe.detail, Catch::Contains("built without CUDA"));
    CHECK(checkDeclaredKind(memory.data(), 4096, MemoryKind::kHost, -1).isOk());
    CHECK(checkDeclaredKind(memory.data(), 4096, MemoryKind::kCuda, 0).code() ==
          StatusCode::kUnimplemented);
  }
  CHECK(toString(probe.kind) == (gpuRuntime().compiledIn() ? "host" : "unknown"));
}
