// kvx-test-labels: unit
// KVX_GPU_RUNTIME: the process-wide seam that gives agent processes a fake GPU runtime.
// gpuRuntime() chooses once per process, so each choice runs in a child process.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "engine/gpu/gpu_runtime.h"

using namespace kvx;
using namespace kvx::engine::gpu;

namespace {

// Runs `check` in a child whose KVX_GPU_RUNTIME is `value`; its exit code (0: passed).
template <typename Check>
int inChild(const char* value, Check check) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    setenv(kGpuRuntimeVariable, value, 1);
    _exit(check(gpuRuntime()));
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("KVX_GPU_RUNTIME values", "[gpu_runtime]") {
  for (const char* native : {"", "auto", "cuda"}) {
    CHECK(parseGpuRuntimeChoice(native).value() == GpuRuntimeChoice::kNative);
  }
  CHECK(parseGpuRuntimeChoice("fake").value() == GpuRuntimeChoice::kFake);
  CHECK(parseGpuRuntimeChoice("fake-strict").value() == GpuRuntimeChoice::kFakeStrict);
  auto bad = parseGpuRuntimeChoice("gpu");
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message() ==
        "KVX_GPU_RUNTIME='gpu' is not one of auto, cuda, fake, fake-strict");
}

TEST_CASE("KVX_GPU_RUNTIME=fake gives the process a fake runtime that says so", "[gpu_runtime]") {
  CHECK(inChild("fake", [](GpuRuntime& runtime) {
          const std::string text = runtime.describe();
          if (!contains(text, "KVX_GPU_RUNTIME=fake") || !contains(text, "test double")) return 1;
          if (runtime.deviceCount().valueOr(0) != kFakeDevices) return 2;
          auto device = runtime.allocateDevice(1 << 20, kFakeDevices - 1);
          if (!device.isOk()) return 3;
          if (runtime.probe(*device).kind != MemoryProbe::Kind::kCuda) return 4;
          if (!runtime.createCopyEngine({}).isOk()) return 5;
          if (!runtime.pinnedAllocator().isOk()) return 6;
          return runtime.freeDevice(*device).isOk() ? 0 : 7;
        }) == 0);
}

TEST_CASE("KVX_GPU_RUNTIME=fake-strict gives device memory the CPU cannot touch", "[gpu_runtime]") {
  CHECK(inChild("fake-strict", [](GpuRuntime& runtime) {
          if (!contains(runtime.describe(), "KVX_GPU_RUNTIME=fake-strict")) return 1;
          if (!contains(runtime.describe(), "the CPU cannot touch")) return 2;
          auto device = runtime.allocateDevice(4096, 0);
          if (!device.isOk()) return 3;
          if (runtime.probe(*device).kind != MemoryProbe::Kind::kCuda) return 4;
          return runtime.freeDevice(*device).isOk() ? 0 : 5;
        }) == 0);
}

TEST_CASE("another KVX_GPU_RUNTIME value is ignored", "[gpu_runtime]") {
  CHECK(inChild("bogus", [](GpuRuntime& runtime) {
          return contains(runtime.describe(), "fake") ? 1 : 0;
        }) == 0);
  CHECK(inChild("cuda", [](GpuRuntime& runtime) {
          return contains(runtime.describe(), "fake") ? 1 : 0;
        }) == 0);
}
