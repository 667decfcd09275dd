#include "engine/memory/gpu_allocated_memory.h"

#include <spdlog/spdlog.h>

namespace kvx::engine {

GpuAllocatedMemory::~GpuAllocatedMemory() {
  void* address = registration_->address();
  registration_.reset();  // the transport lets go of the memory before it is freed
  const Status freed = owner_->freeDevice(address);
  if (!freed.isOk()) spdlog::warn("freeing a GPU region: {}", freed.toString());
}

}  // namespace kvx::engine
