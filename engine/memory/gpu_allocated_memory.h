#pragma once

// GpuAllocatedMemory: device memory the engine allocated through its GPU runtime and then
// registered with a transport that moves it (a UCX built with CUDA). kvx allocates the memory
// itself rather than asking UCX to: UCX 1.13 allocates CUDA memory only on a thread with a
// current CUDA context, and the runtime's allocation sets that up. Destroying it deregisters
// the region first, then frees the memory.
//
// Thread safety: the accessors are const and safe from any thread.

#include <cstdint>
#include <memory>
#include <span>

#include "engine/gpu/gpu_runtime.h"
#include "engine/transport/transport_memory.h"

namespace kvx::engine {

class GpuAllocatedMemory final : public TransportMemory {
 public:
  // REQUIRES: `registration` covers memory from owner->allocateDevice(); `owner` outlives this.
  GpuAllocatedMemory(std::unique_ptr<TransportMemory> registration, gpu::GpuRuntime* owner)
      : registration_(std::move(registration)), owner_(owner) {}
  ~GpuAllocatedMemory() override;

  GpuAllocatedMemory(const GpuAllocatedMemory&) = delete;
  GpuAllocatedMemory& operator=(const GpuAllocatedMemory&) = delete;

  void* address() const override { return registration_->address(); }
  std::uint64_t length() const override { return registration_->length(); }
  MemoryKind kind() const override { return registration_->kind(); }
  std::span<const std::uint8_t> packedRemoteKey() const override {
    return registration_->packedRemoteKey();
  }
  const TransportMemory& registration() const override { return *registration_; }

 private:
  std::unique_ptr<TransportMemory> registration_;
  gpu::GpuRuntime* owner_;
};

}  // namespace kvx::engine
