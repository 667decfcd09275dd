#pragma once

// HostOnlyGpuRuntime: the GpuRuntime of a build without CUDA. It sees no device, cannot tell
// device pointers from host ones (another library in the process may use CUDA), and refuses
// everything that needs a device with UNIMPLEMENTED. Stateless; any thread.

#include "engine/gpu/gpu_runtime.h"

namespace kvx::engine::gpu {

class HostOnlyGpuRuntime final : public GpuRuntime {
 public:
  bool compiledIn() const override { return false; }
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

}  // namespace kvx::engine::gpu
