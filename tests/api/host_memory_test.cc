// kvx-test-labels: unit serial
#include "kvx/host_memory.h"

#include <catch2/catch.hpp>

#include "tests/support/temp_file.h"

using namespace kvx;
using kvx::test::TempFile;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

}  // namespace

TEST_CASE("the host's room is read from meminfo, shmmax and the shared-memory filesystem",
          "[memory]") {
  TempFile meminfo(
      "MemTotal:       25165824 kB\nMemFree:         1048576 kB\n"
      "MemAvailable:   20971520 kB\nBuffers:           1024 kB\n");
  TempFile shmmax("68719476736\n");
  const HostMemoryRoom room = readHostMemoryRoom({meminfo.path(), shmmax.path(), "/tmp"});
  REQUIRE(room.available);
  CHECK(*room.available == 20 * kGiB);
  REQUIRE(room.largestSysvSegment);
  CHECK(*room.largestSysvSegment == 64 * kGiB);
  CHECK(room.sharedMemoryFree);  // statvfs of /tmp
}

TEST_CASE("figures that cannot be read are left unchecked", "[memory]") {
  const HostMemoryRoom room =
      readHostMemoryRoom({"/nonexistent/meminfo", "/nonexistent/shmmax", "/nonexistent/shm"});
  CHECK_FALSE(room.available);
  CHECK_FALSE(room.largestSysvSegment);
  CHECK_FALSE(room.sharedMemoryFree);
  CHECK(checkHostMemoryRoom(1ull << 50, room).isOk());
}

TEST_CASE("a region larger than MemAvailable is refused with both sizes", "[memory]") {
  const HostMemoryRoom room{20 * kGiB, ~0ull, 12 * kGiB};
  CHECK(checkHostMemoryRoom(16 * kGiB, room).isOk());  // System V: /dev/shm is not used
  const Status refused = checkHostMemoryRoom(20 * 1024 * kGiB, room);  // 20 TiB
  CHECK(refused.code() == StatusCode::kResourceExhausted);
  CHECK_THAT(refused.message(), Catch::Contains("(20480.00 GiB) of host memory asked") &&
                                    Catch::Contains("20.00 GiB available (MemAvailable)"));
}

TEST_CASE("beyond kernel.shmmax the region must fit the free space of /dev/shm", "[memory]") {
  const HostMemoryRoom room{20 * kGiB, 4 * kGiB, 12 * kGiB};
  CHECK(checkHostMemoryRoom(3 * kGiB, room).isOk());
  CHECK(checkHostMemoryRoom(10 * kGiB, room).isOk());  // a POSIX file that fits
  const Status refused = checkHostMemoryRoom(16 * kGiB, room);
  CHECK(refused.code() == StatusCode::kResourceExhausted);
  CHECK_THAT(refused.message(), Catch::Contains("kernel.shmmax 4294967296") &&
                                    Catch::Contains("12.00 GiB free in /dev/shm"));
}
