#pragma once

// Staging memory for the staged GPU path: StagingAllocator (where the bytes come from:
// cudaHostAlloc'd pinned memory from the GPU runtime, or plain host memory in tests) and
// StagingPool (N buffers of one chunk size, lent to one StagedPipeline at a time).
//
// Ownership: a pool owns its buffers and returns them to its allocator when destroyed; it
// keeps the allocator alive. Thread safety: every member may be called from any thread.

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kvx/result.h"

namespace kvx::engine::gpu {

class StagingAllocator {
 public:
  virtual ~StagingAllocator() = default;
  // `bytes` of host memory the copy engine can reach at full speed, or why not.
  virtual Result<void*> allocate(std::size_t bytes) = 0;
  // REQUIRES: `address` came from allocate() on this allocator.
  virtual void release(void* address) = 0;
  // "pinned host memory (cudaHostAlloc)", "plain host memory".
  virtual std::string describe() const = 0;
};

// Page-aligned ordinary host memory: for tests and the fake copy engine.
class HostStagingAllocator final : public StagingAllocator {
 public:
  Result<void*> allocate(std::size_t bytes) override;
  void release(void* address) override;
  std::string describe() const override { return "plain host memory"; }
};

class StagingPool {
 public:
  // `count` buffers of `chunkBytes` each; INVALID_ARGUMENT for zero, the allocator's error if
  // it runs out (what was allocated is released).
  static Result<std::shared_ptr<StagingPool>> create(std::shared_ptr<StagingAllocator> allocator,
                                                     std::size_t count, std::size_t chunkBytes);
  ~StagingPool();

  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  std::size_t count() const { return buffers_.size(); }
  std::size_t chunkBytes() const { return chunkBytes_; }
  std::byte* buffer(std::size_t index) const { return buffers_[index]; }
  std::string describe() const;

  // The pool serves one move at a time: acquire() is false while another holds it.
  bool acquire() { return !busy_.exchange(true); }
  void releaseToPool() { busy_.store(false); }

 private:
  StagingPool(std::shared_ptr<StagingAllocator> allocator, std::size_t chunkBytes);

  std::shared_ptr<StagingAllocator> allocator_;
  std::size_t chunkBytes_;
  std::vector<std::byte*> buffers_;  // set by create(), then immutable
  std::atomic<bool> busy_{false};
};

}  // namespace kvx::engine::gpu
