#pragma once

// Page-aligned blocks of the C heap, released with std::free: host staging buffers and the
// fake runtime's host-visible device memory.
//
// posix_memalign, not aligned_alloc: UCX's malloc hooks (libucm, installed through relocation
// tables with UCX_MEM_MMAP_HOOK_MODE=reloc) replace posix_memalign and free but not
// aligned_alloc, and their free crashes on a block that glibc's aligned_alloc gave.
// Safe from any thread.

#include <stdlib.h>

#include <cstddef>

namespace kvx::engine::gpu {

inline constexpr std::size_t kPageAlignment = 4096;

// `bytes` (whole pages) aligned to kPageAlignment; nullptr when the heap has no room.
inline void* allocatePageAligned(std::size_t bytes) {
  void* address = nullptr;
  return ::posix_memalign(&address, kPageAlignment, bytes) == 0 ? address : nullptr;
}

}  // namespace kvx::engine::gpu
