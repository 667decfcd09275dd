#pragma once

// InprocMemory: a region registered with the in-process fabric; its packed key is its id.

#include <cstdint>
#include <memory>

#include "engine/transport/transport_memory.h"

namespace kvx::engine::inproc {

class InprocMemory final : public TransportMemory {
 public:
  // `owned` is non-null when the transport allocated the memory.
  InprocMemory(std::uint64_t owner, void* address, std::uint64_t length, MemoryKind kind,
               std::unique_ptr<std::uint8_t[]> owned);
  ~InprocMemory() override;

  void* address() const override { return address_; }
  std::uint64_t length() const override { return length_; }
  MemoryKind kind() const override { return kind_; }
  std::span<const std::uint8_t> packedRemoteKey() const override { return packedKey_; }

 private:
  void* address_;
  std::uint64_t length_;
  MemoryKind kind_;
  std::unique_ptr<std::uint8_t[]> owned_;
  std::uint64_t memoryId_;
  std::uint8_t packedKey_[8];
};

}  // namespace kvx::engine::inproc
