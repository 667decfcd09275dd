#include "cli/gpu_memory_options.h"

#include <CLI/CLI.hpp>

#include "kvx/agent_options.h"
#include "kvx/memory.h"

namespace kvx::cli {

void addAgentsGpuMemoryOptions(CLI::App& app, std::string& memory, int& device,
                               std::string& gpuPath, const std::string& memoryHelp) {
  app.add_option("--memory", memory, memoryHelp)
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  app.add_option("--device", device, "with --memory cuda: the agents' CUDA device (default 0)");
  app.add_option("--gpu-path", gpuPath,
                 "with --memory cuda: direct (GPUDirect; the agents refuse it at once, with the "
                 "reason, where UCX cannot move GPU memory), staged (through pinned host "
                 "buffers), or auto (direct when possible)")
      ->check(CLI::IsMember({"auto", "direct", "staged"}))
      ->capture_default_str();
}

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

}  // namespace kvx::cli
