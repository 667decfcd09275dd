#pragma once

// CudaGpuRuntime: the GpuRuntime over the CUDA runtime API. Holds no state of its own (the
// CUDA runtime is process-wide); any thread. Compiled only with CUDA.

#include "engine/gpu/gpu_runtime.h"

namespace kvx::engine::gpu::cuda {

class CudaGpuRuntime final : public GpuRuntime {
 public:
  bool compiledIn() const override { return true; }
  std::string describe() const override;
  Result<int> deviceCount() const override;
  MemoryProbe probe(const void* address) const override;
  Result<void*> allocateDevice(std::size_t bytes, int device) override;
  Status freeDevice(void* address) override;
  Status bindThread(int device) override;
  Result<std::shared_ptr<StagingAllocator>> pinnedAllocator() override;
  Result<HostPinning> pinHost(void* address, std::size_t bytes) override;
  void unpinHost(void* address) override;
  Result<std::unique_ptr<CopyEngine>> createCopyEngine(const CopyEngineOptions& options) override;
};

}  // namespace kvx::engine::gpu::cuda
