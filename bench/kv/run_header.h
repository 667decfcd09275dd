#pragma once

// The configuration a `kvx bench` run reports before any figure: kvx and UCX versions, the
// UCX settings kvx applies for each transport (with the user's UCX_* overrides), the CPU and
// kernel, whether UCX could move GPU memory (GPUDirect) and which data path this run uses:
// where the pools live, the GPU runtime (a test double says so), the data path the agents
// reported, and what the bare reference moves (host memory, always).

#include <string>
#include <vector>

#include "bench/kv/bench_output.h"
#include "bench/kv/case_outcome.h"

namespace kvx::bench {

// Where a run's pools live and how their GPU memory moves (kvx bench --memory, --device,
// --gpu-path).
struct MemorySetting {
  std::string kind = "host";  // host | cuda
  int device = 0;
  std::string gpuPath = "auto";  // auto | direct | staged
};

// The header before any case ran: the GPUDirect line says what this process expects (what
// UCX can do, what --gpu-path asks) and the GPU runtime is this process's.
RunHeader describeRun(const std::vector<std::string>& transports,
                      const std::vector<std::string>& scenarios, const std::string& commandLine,
                      const MemorySetting& memory = {});

// After the cases: what the agents reported replaces what was expected: their data paths
// (a line of their own, and the GPUDirect line where a data path states it), their GPU
// runtime, or the reason an agent refused the path (--gpu-path direct where it cannot be).
void addLivePath(RunHeader& header, const std::vector<CaseOutcome>& outcomes,
                 const MemorySetting& memory);

}  // namespace kvx::bench
