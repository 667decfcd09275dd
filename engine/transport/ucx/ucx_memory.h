#pragma once

// UcxMemory: a region mapped with ucp_mem_map, either caller memory (registered) or memory
// UCX allocates (UCP_MEM_MAP_ALLOCATE: on shared memory a sysv/posix segment that peers'
// puts and gets reach without this side progressing, the one truly one-sided path in UCX
// 1.13). Owns the mapping and its packed remote key; destroying it unmaps (and frees).
//
// Thread: created and destroyed under the transport's lock (taken here); the accessors are
// immutable and safe from any thread.

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/transport/transport_memory.h"
#include "engine/transport/ucx/ucx_worker.h"
#include "kvx/result.h"

namespace kvx::engine::ucx {

class UcxMemory final : public TransportMemory {
 public:
  // Maps [address, address + length) of caller memory.
  static Result<std::unique_ptr<UcxMemory>> registerRegion(std::shared_ptr<UcxWorker> worker,
                                                           void* address, std::uint64_t length,
                                                           MemoryKind kind);
  // Lets UCX allocate `length` bytes and maps them.
  static Result<std::unique_ptr<UcxMemory>> allocate(std::shared_ptr<UcxWorker> worker,
                                                     std::uint64_t length, MemoryKind kind);
  ~UcxMemory() override;

  void* address() const override { return address_; }
  std::uint64_t length() const override { return length_; }
  MemoryKind kind() const override { return kind_; }
  std::span<const std::uint8_t> packedRemoteKey() const override { return packedKey_; }

  // True when [address, address + length) lies inside this region.
  bool contains(const void* address, std::uint64_t length) const;

 private:
  UcxMemory(std::shared_ptr<UcxWorker> worker, MemoryKind kind)
      : worker_(std::move(worker)), kind_(kind) {}
  Status map(void* address, std::uint64_t length, bool allocate);

  std::shared_ptr<UcxWorker> worker_;
  MemoryKind kind_;
  ucp_mem_h memh_ = nullptr;
  void* address_ = nullptr;
  std::uint64_t length_ = 0;
  std::vector<std::uint8_t> packedKey_;
};

}  // namespace kvx::engine::ucx
