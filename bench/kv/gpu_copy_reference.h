#pragma once

// The GPU copy reference of a `kvx bench --memory cuda` run: what the GPU runtime's own copy
// engine moves on the agents' device, measured in the bench process before the cases, so that
// kvx's GPU figures have ceilings from the same run (WORKLOADS.md): device to device (the
// direct path's, cudaMemcpy between two buffers of one GPU) and host to device and device to
// host through pinned memory (the staged path's: every staged byte crosses one of them on
// each side).

#include <cstddef>
#include <string>

#include "kvx/result.h"

namespace kvx::bench {

struct GpuCopyReference {
  std::size_t bytes = 0;      // per copy
  int copies = 0;             // timed copies per direction, after one untimed
  double deviceToDevice = 0;  // GB/s (1e9 B/s), bytes moved (not read + written)
  double hostToDevice = 0;
  double deviceToHost = 0;
  std::string engine;  // the copy engine's description
};

// Copies of `bytes` through the copy engine of `device`, one after another. Errors from the
// runtime (no device, allocation) are returned as they are.
Result<GpuCopyReference> measureGpuCopyReference(int device, std::size_t bytes = 256u << 20,
                                                 int copies = 8);

// "GPU copy reference (CUDA copy engine on device 0 (...), 256 MiB copies): device->device
// 1460.7 GB/s, host->device 55.0 GB/s, device->host 53.6 GB/s".
std::string describeGpuCopyReference(const GpuCopyReference& reference);

}  // namespace kvx::bench
