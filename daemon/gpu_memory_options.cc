#include "daemon/gpu_memory_options.h"

#include "kvx/agent_options.h"
#include "kvx/memory.h"

namespace kvx::daemon {

Status validateGpuMemoryOptions(const std::string& memory, int device, const std::string& gpuPath,
                                std::string_view pools) {
  if (!parseMemoryKind(memory)) {
    return invalidArgument("--memory '" + memory + "' is not host or cuda");
  }
  if (!parseGpuPath(gpuPath)) {
    return invalidArgument("--gpu-path '" + gpuPath + "' is not auto, direct or staged");
  }
  if (memory == "cuda") {
    if (device < -1) {
      return invalidArgument("--device " + std::to_string(device) +
                             " is not a CUDA device (0, 1, ...; CUDA_VISIBLE_DEVICES order)");
    }
    return Status::ok();
  }
  if (device != -1) {
    return invalidArgument("--device " + std::to_string(device) + " applies to --memory cuda; " +
                           std::string(pools) + " in host memory");
  }
  if (gpuPath != "auto") {
    return invalidArgument("--gpu-path " + gpuPath + " applies to --memory cuda (how GPU " +
                           "memory moves); " + std::string(pools) +
                           " in host memory, which always moves directly");
  }
  return Status::ok();
}

}  // namespace kvx::daemon
