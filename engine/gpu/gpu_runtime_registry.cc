// The one place that knows whether CUDA is compiled in (KVX_WITH_CUDA is defined for this
// file alone, by engine/gpu/CMakeLists.txt).

#include "engine/gpu/gpu_runtime.h"

#if KVX_WITH_CUDA
#include "engine/gpu/cuda/cuda_gpu_runtime.h"
#else
#include "engine/gpu/host_only_gpu_runtime.h"
#endif

namespace kvx::engine::gpu {

GpuRuntime& gpuRuntime() {
#if KVX_WITH_CUDA
  static cuda::CudaGpuRuntime runtime;
#else
  static HostOnlyGpuRuntime runtime;
#endif
  return runtime;
}

}  // namespace kvx::engine::gpu
