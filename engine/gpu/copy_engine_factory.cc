#include "engine/gpu/copy_engine_factory.h"

#include "engine/gpu/gpu_runtime.h"

namespace kvx::engine::gpu {

Result<std::unique_ptr<CopyEngine>> createCopyEngine(const CopyEngineOptions& options) {
  GpuRuntime& runtime = gpuRuntime();
  if (!runtime.compiledIn()) return runtime.createCopyEngine(options);  // says why not
  Result<int> devices = runtime.deviceCount();
  if (!devices.isOk()) {
    return failedPrecondition("no CUDA device visible (" + devices.status().message() + ")");
  }
  if (*devices == 0) return failedPrecondition("no CUDA device visible (the runtime lists none)");
  if (options.device < 0 || options.device >= *devices) {
    return invalidArgument("CUDA device " + std::to_string(options.device) + " does not exist (" +
                           std::to_string(*devices) + " visible)");
  }
  if (options.streams == 0) return invalidArgument("a copy engine needs at least one stream");
  return runtime.createCopyEngine(options);
}

}  // namespace kvx::engine::gpu
