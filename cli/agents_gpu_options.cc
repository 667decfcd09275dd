#include "cli/agents_gpu_options.h"

#include <CLI/CLI.hpp>

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

}  // namespace kvx::cli
