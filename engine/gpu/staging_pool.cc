#include "engine/gpu/staging_pool.h"

#include <cstdlib>

namespace kvx::engine::gpu {

namespace {
constexpr std::size_t kAlignment = 4096;
}

Result<void*> HostStagingAllocator::allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // posix_memalign, not aligned_alloc: UCX's malloc hooks (libucm, set through relocation
  // tables with UCX_MEM_MMAP_HOOK_MODE=reloc) replace posix_memalign and free but not
  // aligned_alloc, and their free crashes on a block glibc's aligned_alloc gave.
  void* address = nullptr;
  if (::posix_memalign(&address, kAlignment, rounded) != 0) address = nullptr;
  if (address == nullptr) {
    return resourceExhausted("cannot allocate " + std::to_string(bytes) +
                             " bytes of host staging memory");
  }
  return address;
}

void HostStagingAllocator::release(void* address) { std::free(address); }

StagingPool::StagingPool(std::shared_ptr<StagingAllocator> allocator, std::size_t chunkBytes)
    : allocator_(std::move(allocator)), chunkBytes_(chunkBytes) {}

Result<std::shared_ptr<StagingPool>> StagingPool::create(
    std::shared_ptr<StagingAllocator> allocator, std::size_t count, std::size_t chunkBytes) {
  if (allocator == nullptr || count == 0 || chunkBytes == 0) {
    return invalidArgument(
        "a staging pool needs an allocator, at least one buffer and a chunk "
        "size above zero (got " +
        std::to_string(count) + " buffers of " + std::to_string(chunkBytes) + " bytes)");
  }
  std::shared_ptr<StagingPool> pool(new StagingPool(std::move(allocator), chunkBytes));
  pool->buffers_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    Result<void*> buffer = pool->allocator_->allocate(chunkBytes);
    if (!buffer.isOk()) {
      return buffer.status().withContext("staging buffer " + std::to_string(i) + " of " +
                                         std::to_string(count));
    }
    pool->buffers_.push_back(static_cast<std::byte*>(*buffer));
  }
  return pool;
}

StagingPool::~StagingPool() {
  for (std::byte* buffer : buffers_) allocator_->release(buffer);
}

std::string StagingPool::describe() const {
  return std::to_string(buffers_.size()) + " x " + std::to_string(chunkBytes_) + " bytes of " +
         allocator_->describe();
}

}  // namespace kvx::engine::gpu
