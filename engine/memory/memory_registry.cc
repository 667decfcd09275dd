#include "engine/memory/memory_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "engine/gpu/memory_probe.h"
#include "engine/memory/gpu_allocated_memory.h"
#include "engine/memory/page_population.h"
#include "engine/memory/staged_only_memory.h"
#include "kvx/host_memory.h"
#include "sync/process_counter.h"

namespace kvx::engine {

std::string describeDescriptor(std::size_t index, std::string_view side) {
  return "descriptor " + std::to_string(index) + " (" + std::string(side) + ")";
}

namespace {

std::string describeRegion(const RegionInfo& info) {
  return "'" + info.name + "' " + describeRange(info.address, info.length);
}

}  // namespace

Status rangeError(std::size_t index, std::string_view side, const RegionInfo& region,
                  std::uint64_t offset, std::uint64_t length, std::string_view owner) {
  const std::string what = describeDescriptor(index, side);
  if (length == 0) return invalidArgument(what + " has length 0");
  return invalidArgument(what + " " + describeRange(region.address + offset, length) +
                         " exceeds region " + describeRegion(region) + std::string(owner) +
                         " (offset " + std::to_string(offset) + ", region length " +
                         std::to_string(region.length) + ")");
}

Status MemoryRegistry::checkNewRegion(const std::string& name, std::uint64_t address,
                                      std::uint64_t length, MemoryKind kind, int device) const {
  if (name.empty()) return invalidArgument("a region needs a name");
  if (length == 0) return invalidArgument("region '" + name + "' has length 0");
  if (address + length < address) {
    return invalidArgument("region '" + name + "' " + describeRange(address, length) +
                           " wraps around the address space");
  }
  if (kind == MemoryKind::kCuda && device < 0) {
    return invalidArgument("CUDA region '" + name + "' needs a device ordinal");
  }
  if (kind == MemoryKind::kHost && device != -1) {
    return invalidArgument("host region '" + name + "' names device " + std::to_string(device) +
                           "; host memory takes device -1");
  }
  for (const auto& [id, region] : regions_) {
    const RegionInfo& other = region->info;
    if (other.name == name) {
      return alreadyExists("a region named '" + name + "' is already registered");
    }
    const bool sameSpace = other.kind == kind && other.device == device;
    const bool overlaps =
        address < other.address + other.length && other.address < address + length;
    if (sameSpace && overlaps) {
      return alreadyExists("region '" + name + "' " + describeRange(address, length) +
                           " overlaps registered region " + describeRegion(other));
    }
  }
  return Status::ok();
}

RegionId MemoryRegistry::insert(RegionInfo info, std::unique_ptr<TransportMemory> memory) {
  info.id = RegionId(sync::nextInProcess<RegionId>());
  auto region = std::make_shared<LocalRegion>();
  region->info = std::move(info);
  region->memory = std::move(memory);
  regions_.emplace(region->info.id, region);
  return region->info.id;
}

Result<RegionId> MemoryRegistry::add(const MemoryRegionSpec& spec) {
  const auto address = reinterpret_cast<std::uint64_t>(spec.address);
  if (spec.address == nullptr)
    return invalidArgument("region '" + spec.name + "' has a null address");
  {
    sync::MutexLock lock(mutex_);
    KVX_RETURN_IF_ERROR(checkNewRegion(spec.name, address, spec.length, spec.kind, spec.device));
  }
  // Memory that is not what the caller declared would be moved by the wrong path (a host
  // copy of device memory, or the other way round): refuse it here, with what was found.
  const gpu::MemoryProber probe = [this](const void* p) { return gpu_.probe(p); };
  KVX_RETURN_IF_ERROR(
      gpu::checkDeclaredKind(spec.address, spec.length, spec.kind, spec.device, probe)
          .withContext("registering region '" + spec.name + "'"));
  // Registration can be slow (pinning pages): do it outside the lock, then re-check.
  auto memory = registerRange(spec.address, spec.length, spec.kind, spec.device);
  if (!memory.isOk()) return memory.status().withContext("registering region '" + spec.name + "'");
  sync::MutexLock lock(mutex_);
  KVX_RETURN_IF_ERROR(checkNewRegion(spec.name, address, spec.length, spec.kind, spec.device));
  return insert(
      RegionInfo{RegionId(), spec.name, address, spec.length, spec.kind, spec.device, spec.exposed},
      std::move(memory).value());
}

Result<bool> MemoryRegistry::transportMoves(MemoryKind kind) const {
  if (kind == MemoryKind::kHost) return true;
  if (gpuPath_ == GpuPath::kStaged) return false;
  if (transport_.supportsMemoryKind(kind)) return true;
  if (gpuPath_ == GpuPath::kDirect) {
    return failedPrecondition(
        "gpu path 'direct' (AgentOptions::gpuPath) needs a transport that moves " +
        std::string(toString(kind)) + " memory, and " + transport_.whyNotMemoryKind(kind) +
        "; use gpu path 'auto' or 'staged' to stage it through host buffers, or a UCX of 1.16 or "
        "later built with CUDA");
  }
  return false;
}

Result<std::unique_ptr<TransportMemory>> MemoryRegistry::registerRange(void* address,
                                                                       std::uint64_t length,
                                                                       MemoryKind kind,
                                                                       int device) {
  KVX_ASSIGN_OR_RETURN(const bool direct, transportMoves(kind));
  if (!direct) {
    return std::unique_ptr<TransportMemory>(
        std::make_unique<StagedOnlyMemory>(address, length, kind));
  }
  if (kind == MemoryKind::kCuda) noteDirectCudaDevice(device);
  return transport_.registerMemory(address, length, kind, device);
}

void MemoryRegistry::noteDirectCudaDevice(int device) {
  int none = -1;
  if (directCudaDevice_->compare_exchange_strong(none, device) || none == device) return;
  spdlog::warn(
      "CUDA memory of device {} is registered with the transport, whose threads use "
      "device {}'s context (the first one registered): kvx is tested with one device "
      "per agent",
      device, none);
}

Result<std::unique_ptr<TransportMemory>> MemoryRegistry::allocateRange(std::uint64_t length,
                                                                       MemoryKind kind, int device,
                                                                       std::uint64_t unpopulated,
                                                                       const HostRoomReader& room) {
  KVX_ASSIGN_OR_RETURN(const bool direct, transportMoves(kind));
  if (direct && kind == MemoryKind::kHost) {
    const std::string detail = unpopulated == 0
                                   ? std::string()
                                   : std::to_string(length) + " for this region, " +
                                         std::to_string(unpopulated) +
                                         " for regions allocated earlier and not populated yet";
    KVX_RETURN_IF_ERROR(checkHostMemoryRoom(length + unpopulated, room(), detail));
    return transport_.allocateMemory(length, kind, device);
  }
  // Device memory is the GPU runtime's to allocate, registered after when the transport moves it.
  KVX_ASSIGN_OR_RETURN(void* address, gpu_.allocateDevice(length, device));
  if (direct) {
    auto registered = registerRange(address, length, kind, device);
    if (!registered.isOk()) {
      gpu_.freeDevice(address).ignore();
      return registered.status();
    }
    return std::unique_ptr<TransportMemory>(
        std::make_unique<GpuAllocatedMemory>(std::move(registered).value(), &gpu_));
  }
  return std::unique_ptr<TransportMemory>(
      std::make_unique<StagedOnlyMemory>(address, length, kind, &gpu_));
}

Result<AllocatedRegion> MemoryRegistry::allocate(const AllocationSpec& spec) {
  if (spec.length == 0) return invalidArgument("region '" + spec.name + "' has length 0");
  std::uint64_t unpopulated = 0;
  HostRoomReader hostRoom;
  {
    sync::MutexLock lock(mutex_);
    for (const auto& [id, bytes] : unpopulatedHost_) unpopulated += bytes;
    hostRoom = hostRoom_;
  }
  auto memory = allocateRange(spec.length, spec.kind, spec.device, unpopulated, hostRoom);
  if (!memory.isOk()) return memory.status().withContext("allocating region '" + spec.name + "'");
  void* address = (*memory)->address();
  if (spec.populate && spec.kind == MemoryKind::kHost) {
    KVX_RETURN_IF_ERROR(
        populatePages(address, spec.length).withContext("populating region '" + spec.name + "'"));
  }
  sync::MutexLock lock(mutex_);
  KVX_RETURN_IF_ERROR(checkNewRegion(spec.name, reinterpret_cast<std::uint64_t>(address),
                                     spec.length, spec.kind, spec.device));
  const bool hostUnpopulated =
      !spec.populate && spec.kind == MemoryKind::kHost && (*memory)->kind() == MemoryKind::kHost;
  const RegionId id =
      insert(RegionInfo{RegionId(), spec.name, reinterpret_cast<std::uint64_t>(address),
                        spec.length, spec.kind, spec.device, spec.exposed},
             std::move(memory).value());
  if (hostUnpopulated) unpopulatedHost_[id] = spec.length;
  return AllocatedRegion{id, address, spec.length};
}

void MemoryRegistry::setHostRoomReader(HostRoomReader reader) {
  sync::MutexLock lock(mutex_);
  hostRoom_ = std::move(reader);
}

Status MemoryRegistry::remove(RegionId id) {
  std::shared_ptr<LocalRegion> region;
  {
    sync::MutexLock lock(mutex_);
    auto it = regions_.find(id);
    if (it == regions_.end()) {
      return notFound("region " + std::to_string(id.value) + " is not registered");
    }
    const std::uint32_t pending = it->second->pendingTransfers.load();
    if (pending != 0) {
      return failedPrecondition("region " + describeRegion(it->second->info) + " is used by " +
                                std::to_string(pending) +
                                " pending transfer(s); wait for or cancel them first");
    }
    region = it->second;
    region->deregistered.store(true);
    regions_.erase(it);
    unpopulatedHost_.erase(id);
  }
  // Transfers that still reference the region keep the registration alive, but they will
  // refuse to post; the transport registration goes away with the last reference.
  return Status::ok();
}

Result<std::shared_ptr<LocalRegion>> MemoryRegistry::find(RegionId id) const {
  sync::MutexLock lock(mutex_);
  auto it = regions_.find(id);
  if (it == regions_.end()) {
    return notFound("local region " + std::to_string(id.value) + " is not registered");
  }
  return it->second;
}

Result<std::shared_ptr<LocalRegion>> MemoryRegistry::resolve(const MemoryRange& range,
                                                             std::size_t index,
                                                             std::string_view side) const {
  auto found = find(range.region);
  if (!found.isOk()) return found.status().withContext(describeDescriptor(index, side));
  const RegionInfo& info = (*found)->info;
  if (!rangeFits(info.length, range.offset, range.length)) {
    return rangeError(index, side, info, range.offset, range.length, "");
  }
  return found;
}

Status MemoryRegistry::pin(std::span<const std::shared_ptr<LocalRegion>> regions) {
  sync::MutexLock lock(mutex_);
  for (const auto& region : regions) {
    if (region->deregistered.load()) {
      return failedPrecondition("region " + describeRegion(region->info) +
                                " was deregistered; the transfer cannot use it");
    }
  }
  for (const auto& region : regions) region->pendingTransfers.fetch_add(1);
  return Status::ok();
}

void MemoryRegistry::unpin(std::span<const std::shared_ptr<LocalRegion>> regions) {
  sync::MutexLock lock(mutex_);
  for (const auto& region : regions) region->pendingTransfers.fetch_sub(1);
}

std::vector<std::shared_ptr<LocalRegion>> MemoryRegistry::exposedRegions() const {
  std::vector<std::shared_ptr<LocalRegion>> out;
  {
    sync::MutexLock lock(mutex_);
    for (const auto& [id, region] : regions_) {
      if (region->info.exposed) out.push_back(region);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->info.id < b->info.id; });
  return out;
}

std::vector<std::shared_ptr<LocalRegion>> MemoryRegistry::regions() const {
  std::vector<std::shared_ptr<LocalRegion>> out;
  {
    sync::MutexLock lock(mutex_);
    for (const auto& [id, region] : regions_) out.push_back(region);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->info.id < b->info.id; });
  return out;
}

std::size_t MemoryRegistry::size() const {
  sync::MutexLock lock(mutex_);
  return regions_.size();
}

}  // namespace kvx::engine
