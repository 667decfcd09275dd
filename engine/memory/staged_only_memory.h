#pragma once

// StagedOnlyMemory: a region of GPU memory that the transport cannot register (a UCX built
// without CUDA, the inproc transport). It stands where the transport's registration would
// be, so the region is known, bounds-checked and pinned like any other, but it has no
// remote key: the transport never touches it, this side stages its bytes through host
// buffers, and a peer that sees it without a key knows that only this side can move it.
// When the engine allocated the memory (through the GPU runtime), it frees it.
//
// Thread safety: the accessors are const and safe from any thread.

#include <cstdint>
#include <span>

#include "engine/gpu/gpu_runtime.h"
#include "engine/transport/transport_memory.h"

namespace kvx::engine {

class StagedOnlyMemory final : public TransportMemory {
 public:
  // `owner` is non-null when the memory came from owner->allocateDevice() and must be
  // returned to it.
  StagedOnlyMemory(void* address, std::uint64_t length, MemoryKind kind,
                   gpu::GpuRuntime* owner = nullptr)
      : address_(address), length_(length), kind_(kind), owner_(owner) {}
  ~StagedOnlyMemory() override;

  StagedOnlyMemory(const StagedOnlyMemory&) = delete;
  StagedOnlyMemory& operator=(const StagedOnlyMemory&) = delete;

  void* address() const override { return address_; }
  std::uint64_t length() const override { return length_; }
  MemoryKind kind() const override { return kind_; }
  std::span<const std::uint8_t> packedRemoteKey() const override { return {}; }

 private:
  void* address_;
  std::uint64_t length_;
  MemoryKind kind_;
  gpu::GpuRuntime* owner_;
};

}  // namespace kvx::engine
