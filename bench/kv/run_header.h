#pragma once

// The configuration a `kvx bench` run reports before any figure: kvx and UCX versions, the
// UCX settings kvx applies for each transport (with the user's UCX_* overrides), the CPU and
// kernel, whether UCX could move GPU memory (GPUDirect) and which data path this run uses.

#include <string>
#include <vector>

#include "bench/kv/bench_output.h"

namespace kvx::bench {

RunHeader describeRun(const std::vector<std::string>& transports,
                      const std::vector<std::string>& scenarios, const std::string& commandLine);

}  // namespace kvx::bench
