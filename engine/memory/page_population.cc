#include "engine/memory/page_population.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kvx::engine {
namespace {

// Linux 5.14; older C libraries do not name it.
#ifndef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = 23;
#else
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#endif

// Whether this kernel knows MADV_POPULATE_WRITE, asked once on a private anonymous page.
// EINVAL from a real range then means the range cannot be populated (a device or driver
// mapping: VM_IO or VM_PFNMAP), not an old kernel, and touching its pages would fault.
bool kernelPopulates() {
  static const bool known = [] {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* probe = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED) return true;  // assume a current kernel; never touch blindly
    const bool ok = madvise(probe, page, kPopulateWrite) == 0 || errno != EINVAL;
    munmap(probe, page);
    return ok;
  }();
  return known;
}

void touchEachPage(std::uintptr_t begin, std::uintptr_t end, std::uintptr_t page) {
  for (std::uintptr_t at = begin; at < end; at += page) {
    auto* byte = reinterpret_cast<volatile std::uint8_t*>(at);
    *byte = *byte;
  }
}

}  // namespace

Status populatePages(void* address, std::uint64_t length) {
  if (address == nullptr || length == 0) return Status::ok();
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  const std::uintptr_t begin = start & ~(page - 1);
  const std::uintptr_t end = (start + length + page - 1) & ~(page - 1);
  if (madvise(reinterpret_cast<void*>(begin), end - begin, kPopulateWrite) == 0) {
    return Status::ok();
  }
  const int error = errno;
  if (error == EINVAL && !kernelPopulates()) {
    touchEachPage(begin, end, page);
    return Status::ok();
  }
  if (error == EINVAL) {
    return invalidArgument("populating " + std::to_string(end - begin) + " bytes at " +
                           std::to_string(begin) +
                           " failed: the range is not ordinary memory (a device or driver " +
                           "mapping); it was left untouched");
  }
  return resourceExhausted("populating " + std::to_string(end - begin) + " bytes at " +
                           std::to_string(begin) + " failed: " + std::strerror(error) +
                           (error == ENOMEM || error == EFAULT
                                ? " (not enough memory for the pool: lower its size)"
                                : ""));
}

}  // namespace kvx::engine
