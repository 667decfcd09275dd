#pragma once

// The options of a command that starts agents (`kvx bench`, `kvx demo`) for where their pools
// live and how GPU memory moves: --memory host|cuda, --device and --gpu-path, checked after
// parsing by daemon::validateGpuMemoryOptions. Call from one thread (CLI11).

#include <string>

#include "cli/cli_app_fwd.h"

namespace kvx::cli {

// Adds the three options to `app`, bound to the arguments; `memoryHelp` says what --memory
// does there.
void addAgentsGpuMemoryOptions(CLI::App& app, std::string& memory, int& device,
                               std::string& gpuPath, const std::string& memoryHelp);

}  // namespace kvx::cli
