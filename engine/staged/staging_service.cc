#include "engine/staged/staging_service.h"

#include <spdlog/spdlog.h>

namespace kvx::engine {

const TransportMemory* StagingLease::registrationOf(const std::byte* buffer) const {
  for (std::size_t i = 0; i < pool->count(); ++i) {
    if (pool->buffer(i) == buffer) return registrations[i].get();
  }
  return nullptr;
}

StagingService::StagingService(Transport& transport, gpu::GpuRuntime& gpu, StagingOptions options)
    : transport_(transport), gpu_(gpu), options_(options) {}

StagingService::~StagingService() {
  close();
  sync::MutexLock lock(mutex_);
  idle_.clear();  // deregisters the buffers, then frees them
}

Status StagingService::prepare(int device) {
  KVX_RETURN_IF_ERROR(copyEngine(device).status());
  {
    sync::MutexLock lock(mutex_);
    if (leases_ > 0) return Status::ok();
  }
  KVX_ASSIGN_OR_RETURN(auto lease, acquire());
  release(std::move(lease));
  return Status::ok();
}

Result<gpu::CopyEngine*> StagingService::copyEngine(int device) {
  {
    sync::MutexLock lock(mutex_);
    auto it = engines_.find(device);
    if (it != engines_.end()) return it->second.get();
  }
  // Created outside the lock (it starts threads and streams); a racing creator's engine wins.
  gpu::CopyEngineOptions options;
  options.device = device;
  Result<std::unique_ptr<gpu::CopyEngine>> created = gpu_.createCopyEngine(options);
  if (!created.isOk()) {
    return created.status().withContext("staging CUDA device " + std::to_string(device) +
                                        " through host memory needs a copy engine");
  }
  sync::MutexLock lock(mutex_);
  auto [it, inserted] = engines_.try_emplace(device, std::move(created).value());
  if (inserted) spdlog::info("staged GPU path: {}", it->second->describe());
  return it->second.get();
}

Result<std::unique_ptr<StagingLease>> StagingService::acquire() {
  {
    sync::MutexLock lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<StagingLease> lease = std::move(idle_.back());
      idle_.pop_back();
      return lease;
    }
  }
  return makeLease();
}

void StagingService::release(std::unique_ptr<StagingLease> lease) {
  if (lease == nullptr) return;
  sync::MutexLock lock(mutex_);
  idle_.push_back(std::move(lease));
}

Result<std::unique_ptr<StagingLease>> StagingService::makeLease() {
  std::shared_ptr<gpu::StagingAllocator> allocator;
  {
    sync::MutexLock lock(mutex_);
    allocator = allocator_;
  }
  if (allocator == nullptr) {
    KVX_ASSIGN_OR_RETURN(allocator, gpu_.pinnedAllocator());
    sync::MutexLock lock(mutex_);
    if (allocator_ == nullptr) allocator_ = allocator;
    allocator = allocator_;
  }
  auto lease = std::make_unique<StagingLease>();
  KVX_ASSIGN_OR_RETURN(lease->pool,
                       gpu::StagingPool::create(allocator, options_.buffers, options_.chunkBytes));
  for (std::size_t i = 0; i < lease->pool->count(); ++i) {
    // Host memory to the transport: it moves the buffers, the copy engine fills them.
    auto registration = transport_.registerMemory(lease->pool->buffer(i), options_.chunkBytes,
                                                  MemoryKind::kHost, -1);
    if (!registration.isOk()) {
      return registration.status().withContext("registering staging buffer " + std::to_string(i) +
                                               " (" + lease->pool->describe() + ")");
    }
    lease->registrations.push_back(std::move(registration).value());
  }
  std::size_t made;
  {
    sync::MutexLock lock(mutex_);
    made = ++leases_;
  }
  spdlog::debug("staged GPU path: staging set {} ready ({})", made, lease->pool->describe());
  return lease;
}

void StagingService::close() {
  std::vector<gpu::CopyEngine*> engines;
  {
    sync::MutexLock lock(mutex_);
    for (auto& [device, engine] : engines_) engines.push_back(engine.get());
  }
  for (gpu::CopyEngine* engine : engines) engine->close();
}

}  // namespace kvx::engine
