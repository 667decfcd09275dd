#include "engine/gpu/cuda/pinned_staging_allocator.h"

#include <cuda_runtime_api.h>

#include "engine/gpu/cuda/cuda_status.h"

namespace kvx::engine::gpu::cuda {

Result<void*> PinnedStagingAllocator::allocate(std::size_t bytes) {
  void* address = nullptr;
  KVX_RETURN_IF_ERROR(
      cudaStatus(cudaHostAlloc(&address, bytes, cudaHostAllocPortable),
                 "cudaHostAlloc of " + std::to_string(bytes) + " bytes of staging memory"));
  return address;
}

void PinnedStagingAllocator::release(void* address) { cudaFreeHost(address); }

}  // namespace kvx::engine::gpu::cuda
