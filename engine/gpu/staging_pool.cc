#include "engine/gpu/staging_pool.h"

#include <cstdlib>

#include "engine/gpu/page_aligned_alloc.h"

namespace kvx::engine::gpu {

Result<void*> HostStagingAllocator::allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kPageAlignment - 1) / kPageAlignment * kPageAlignment;
  void* address = allocatePageAligned(rounded);
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
