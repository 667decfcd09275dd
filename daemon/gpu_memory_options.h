#pragma once

// validateGpuMemoryOptions: the rules shared by `kvx agent` and `kvx bench` for where KV pools
// live (--memory host|cuda), on which device (--device, -1: not given) and how their GPU memory
// moves (--gpu-path auto|direct|staged): --device and a --gpu-path other than auto apply to
// CUDA pools only. `pools` says in messages what is in host memory ("this pool is", "this
// run's pools are"). INVALID_ARGUMENT naming the option and the rule.

#include <string>
#include <string_view>

#include "kvx/status.h"

namespace kvx::daemon {

Status validateGpuMemoryOptions(const std::string& memory, int device, const std::string& gpuPath,
                                std::string_view pools);

}  // namespace kvx::daemon
