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
  if (error == EINVAL) {  // a kernel without MADV_POPULATE_WRITE
    touchEachPage(begin, end, page);
    return Status::ok();
  }
  return resourceExhausted("populating " + std::to_string(end - begin) + " bytes at " +
                           std::to_string(begin) + " failed: " + std::strerror(error) +
                           (error == ENOMEM || error == EFAULT
                                ? " (not enough memory for the pool: lower its size)"
                                : ""));
}

}  // namespace kvx::engine
