#pragma once

// PinnedStagingAllocator: page-locked host memory from cudaHostAlloc, which the GPU's copy
// engines reach by DMA at full speed and asynchronously (pageable memory would make each
// copy synchronous). Portable across devices. Stateless; any thread. Compiled only with CUDA.

#include "engine/gpu/staging_pool.h"

namespace kvx::engine::gpu::cuda {

class PinnedStagingAllocator final : public StagingAllocator {
 public:
  Result<void*> allocate(std::size_t bytes) override;
  void release(void* address) override;
  std::string describe() const override { return "pinned host memory (cudaHostAlloc)"; }
};

}  // namespace kvx::engine::gpu::cuda
