#pragma once

// MemoryRegistry: the regions registered with one agent.
//
// Thread safety: all members may be called from any thread.
// Guarantees: regions never overlap (per memory kind and device); ids are never reused; a
// region with pending transfers cannot be deregistered (pin/unpin bracket each posting).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/gpu/gpu_runtime.h"
#include "engine/memory/address_range.h"
#include "engine/memory/local_region.h"
#include "engine/transport/transport.h"
#include "kvx/agent_options.h"
#include "kvx/host_memory.h"
#include "kvx/memory.h"
#include "kvx/result.h"
#include "sync/mutex.h"

namespace kvx::engine {

// GPU memory the transport cannot move (memory kinds it does not support) is not registered
// with it: the region gets a StagedOnlyMemory instead, and transfers stage it through host
// buffers. `gpuPath` changes that for CUDA memory: kStaged never registers it with the
// transport (always StagedOnlyMemory); kDirect refuses, with FAILED_PRECONDITION naming the
// transport's reason, what the transport cannot move instead of staging it. Declared kinds
// are checked against what `gpu` says the memory is.
//
// Host memory the transport allocates is checked first against what the host can give
// (kvx/host_memory.h), counting the regions allocated earlier without populating their
// pages, which MemAvailable does not show yet: a pool of many regions that together exceed
// the host is refused at the region that crosses the line, not granted.
//
// CUDA memory the transport moves is allocated through `gpu` and then registered (a
// GpuAllocatedMemory), never allocated by the transport. The device of the first such region
// is the one whose context the transport's threads make current (directCudaDevice()).
class MemoryRegistry {
 public:
  // REQUIRES: `transport` and `gpu` outlive the registry and its regions.
  MemoryRegistry(Transport& transport, gpu::GpuRuntime& gpu, GpuPath gpuPath = GpuPath::kAuto)
      : transport_(transport), gpu_(gpu), gpuPath_(gpuPath) {}
  explicit MemoryRegistry(Transport& transport) : MemoryRegistry(transport, gpu::gpuRuntime()) {}

  Result<RegionId> add(const MemoryRegionSpec& spec);
  Result<AllocatedRegion> allocate(const AllocationSpec& spec);
  // FAILED_PRECONDITION while transfers using it are pending; NOT_FOUND if unknown.
  Status remove(RegionId id);

  Result<std::shared_ptr<LocalRegion>> find(RegionId id) const;
  // Checks that [offset, offset + length) lies in the region. Errors name the descriptor:
  // "descriptor 17 (local) [0x7f00+65536) exceeds region 'kv' [0x7e00+32768)".
  Result<std::shared_ptr<LocalRegion>> resolve(const MemoryRange& range, std::size_t index,
                                               std::string_view side) const;

  // Marks the regions busy for a posting; fails if one was deregistered meanwhile.
  Status pin(std::span<const std::shared_ptr<LocalRegion>> regions);
  void unpin(std::span<const std::shared_ptr<LocalRegion>> regions);

  // The exposed regions with their packed keys, in id order.
  std::vector<std::shared_ptr<LocalRegion>> exposedRegions() const;
  // Every region, exposed or not, in id order.
  std::vector<std::shared_ptr<LocalRegion>> regions() const;
  std::size_t size() const;

  // Where allocate() reads the host's room from (readHostMemoryRoom() unless a test says).
  using HostRoomReader = std::function<HostMemoryRoom()>;
  void setHostRoomReader(HostRoomReader reader);

  // The device of the first CUDA region registered with the transport, -1 before one is.
  // Shared so that a transport's thread setup can read it for as long as it needs to.
  std::shared_ptr<const std::atomic<int>> directCudaDevice() const { return directCudaDevice_; }

 private:
  // Publishes `device` as directCudaDevice() if it is the first; warns if it differs.
  void noteDirectCudaDevice(int device);
  Status checkNewRegion(const std::string& name, std::uint64_t address, std::uint64_t length,
                        MemoryKind kind, int device) const KVX_REQUIRES(mutex_);
  RegionId insert(RegionInfo info, std::unique_ptr<TransportMemory> memory) KVX_REQUIRES(mutex_);
  // The transport's registration, or a StagedOnlyMemory for a kind it cannot move.
  Result<std::unique_ptr<TransportMemory>> registerRange(void* address, std::uint64_t length,
                                                         MemoryKind kind, int device);
  // `unpopulated`: bytes of host regions allocated earlier without populating them; `room`
  // reads what the host can give.
  Result<std::unique_ptr<TransportMemory>> allocateRange(std::uint64_t length, MemoryKind kind,
                                                         int device, std::uint64_t unpopulated,
                                                         const HostRoomReader& room);
  // Whether the transport registers memory of `kind` under gpuPath_; FAILED_PRECONDITION
  // when gpuPath_ is kDirect and it cannot.
  Result<bool> transportMoves(MemoryKind kind) const;

  Transport& transport_;
  gpu::GpuRuntime& gpu_;
  const GpuPath gpuPath_;
  const std::shared_ptr<std::atomic<int>> directCudaDevice_ =
      std::make_shared<std::atomic<int>>(-1);
  mutable sync::Mutex mutex_;
  HostRoomReader hostRoom_ KVX_GUARDED_BY(mutex_) = [] { return readHostMemoryRoom(); };
  std::unordered_map<RegionId, std::shared_ptr<LocalRegion>> regions_ KVX_GUARDED_BY(mutex_);
  // Host regions the transport allocated without populating them: their bytes by region.
  std::unordered_map<RegionId, std::uint64_t> unpopulatedHost_ KVX_GUARDED_BY(mutex_);
};

// "descriptor 17 (local)".
std::string describeDescriptor(std::size_t index, std::string_view side);

// The error for a range that does not fit `region` (`owner` is "" or " of peer 'x'").
Status rangeError(std::size_t index, std::string_view side, const RegionInfo& region,
                  std::uint64_t offset, std::uint64_t length, std::string_view owner);

}  // namespace kvx::engine
