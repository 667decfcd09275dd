// kvx-test-labels: unit
#include "engine/memory/page_population.h"

#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

using namespace kvx;

namespace {

// Pages of [address, +length) resident in this process's page tables (mincore).
std::size_t residentPages(void* address, std::size_t length) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> map((length + page - 1) / page);
  REQUIRE(mincore(address, length, map.data()) == 0);
  std::size_t resident = 0;
  for (unsigned char bit : map) resident += bit & 1;
  return resident;
}

}  // namespace

TEST_CASE("populating makes every page of a fresh shared mapping resident, contents kept",
          "[page_population]") {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t length = 64 * page;
  void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(raw != MAP_FAILED);
  auto* bytes = static_cast<unsigned char*>(raw);
  bytes[3 * page + 5] = 0xab;  // one page already written
  CHECK(residentPages(raw, length) < 64);
  // An unaligned start and length: the pages they touch are populated.
  REQUIRE(engine::populatePages(bytes + 17, length - 100).isOk());
  CHECK(residentPages(raw, length) == 64);
  CHECK(bytes[3 * page + 5] == 0xab);
  CHECK(bytes[10 * page] == 0);
  munmap(raw, length);
}

TEST_CASE("populating nothing is a no-op, and an unmapped range is an error", "[page_population]") {
  CHECK(engine::populatePages(nullptr, 4096).isOk());
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* raw = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(raw != MAP_FAILED);
  CHECK(engine::populatePages(raw, 0).isOk());
  munmap(raw, 4 * page);
  const Status gone = engine::populatePages(raw, 4 * page);
  REQUIRE_FALSE(gone.isOk());
  CHECK_THAT(gone.message(), Catch::Contains("populating"));
}

// What a CUDA device pointer (cudaMalloc or a peer's cuda_ipc mapping) looks like to the
// kernel: a range it cannot populate (EINVAL, measured on an H100) whose pages the CPU must
// not touch. A PROT_NONE mapping answers the same EINVAL here; populating it used to fall
// back to touching each page, which is the segfault of the direct GPU path on a CUDA-capable
// UCX (a peer's device memory mapped by ucp_rkey_ptr and populated).
TEST_CASE("a range the kernel cannot populate is refused, never touched", "[page_population]") {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t length = 4 * page;
  void* inaccessible = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(inaccessible != MAP_FAILED);
  const Status status = engine::populatePages(inaccessible, length);
  CHECK_FALSE(status.isOk());
  CHECK_THAT(status.message(), Catch::Contains("not ordinary memory"));
  CHECK(residentPages(inaccessible, length) == 0);
  munmap(inaccessible, length);
}
