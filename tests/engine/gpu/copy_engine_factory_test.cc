// kvx-test-labels: unit
#include "engine/gpu/copy_engine_factory.h"

#include <catch2/catch.hpp>

#include "engine/gpu/gpu_runtime.h"

using namespace kvx;
using namespace kvx::engine::gpu;

TEST_CASE("the factory gives the CUDA copy engine or says why not", "[copy_engine]") {
  GpuRuntime& runtime = gpuRuntime();
  INFO("runtime: " << runtime.describe());
  auto engine = createCopyEngine();
  if (!runtime.compiledIn()) {
    REQUIRE(engine.status().code() == StatusCode::kUnimplemented);
    CHECK_THAT(engine.status().message(), Catch::Contains("built without CUDA"));
    CHECK_FALSE(runtime.pinnedAllocator().isOk());
    CHECK_FALSE(runtime.allocateDevice(4096, 0).isOk());
    return;
  }
  Result<int> devices = runtime.deviceCount();
  if (!devices.isOk() || *devices == 0) {
    REQUIRE(engine.status().code() == StatusCode::kFailedPrecondition);
    CHECK_THAT(engine.status().message(), Catch::Contains("no CUDA device visible"));
    if (!devices.isOk()) {
      // CUDA's own name for the reason is kept.
      CHECK_THAT(engine.status().message(), Catch::Contains("cudaGetDeviceCount: cudaError"));
    }
    return;
  }
  REQUIRE(engine.isOk());
  CHECK_THAT((*engine)->describe(), Catch::Contains("CUDA copy engine on device 0"));
  CopyEngineOptions outOfRange;
  outOfRange.device = *devices;
  CHECK(createCopyEngine(outOfRange).status().code() == StatusCode::kInvalidArgument);
}
