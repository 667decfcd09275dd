// The one place that knows whether CUDA is compiled in (KVX_WITH_CUDA is defined for this
// file alone, by engine/gpu/CMakeLists.txt), and that reads KVX_GPU_RUNTIME.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/gpu/fake_gpu_runtime.h"
#include "engine/gpu/gpu_runtime.h"

#if KVX_WITH_CUDA
#include "engine/gpu/cuda/cuda_gpu_runtime.h"
#else
#include "engine/gpu/host_only_gpu_runtime.h"
#endif

namespace kvx::engine::gpu {

namespace {

GpuRuntime& nativeRuntime() {
#if KVX_WITH_CUDA
  static cuda::CudaGpuRuntime runtime;
#else
  static HostOnlyGpuRuntime runtime;
#endif
  return runtime;
}

GpuRuntime& chooseRuntime() {
  const char* value = std::getenv(kGpuRuntimeVariable);
  auto choice = parseGpuRuntimeChoice(value == nullptr ? "" : value);
  if (!choice.isOk()) {
    // kvx_gpu has no logger; this runs once per process.
    std::fprintf(stderr, "kvx: %s; ignored, using %s\n", choice.status().message().c_str(),
                 nativeRuntime().describe().c_str());
    return nativeRuntime();
  }
  if (*choice != GpuRuntimeChoice::kNative) {
    const bool strict = *choice == GpuRuntimeChoice::kFakeStrict;
    // Never destroyed: agents still alive during static destruction may free device memory
    // into it, and its copy threads must not be joined then.
    static FakeGpuRuntime* fake = new FakeGpuRuntime(
        kFakeDevices, {}, std::string(kGpuRuntimeVariable) + "=" + std::string(value),
        strict ? FakeDeviceAccess::kCopyEngineOnly : FakeDeviceAccess::kHostVisible);
    return *fake;
  }
  return nativeRuntime();
}

}  // namespace

Result<GpuRuntimeChoice> parseGpuRuntimeChoice(std::string_view value) {
  if (value.empty() || value == "auto" || value == "cuda") return GpuRuntimeChoice::kNative;
  if (value == "fake") return GpuRuntimeChoice::kFake;
  if (value == "fake-strict") return GpuRuntimeChoice::kFakeStrict;
  return invalidArgument(std::string(kGpuRuntimeVariable) + "='" + std::string(value) +
                         "' is not one of auto, cuda, fake, fake-strict");
}

GpuRuntime& gpuRuntime() {
  static GpuRuntime& runtime = chooseRuntime();
  return runtime;
}

}  // namespace kvx::engine::gpu
