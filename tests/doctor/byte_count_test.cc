// kvx-test-labels: unit serial
#include "doctor/byte_count.h"

#include <catch2/catch.hpp>

using kvx::doctor::formatBytes;

TEST_CASE("byte counts for people", "[doctor]") {
  CHECK(formatBytes(0) == "0 B");
  CHECK(formatBytes(512) == "512 B");
  CHECK(formatBytes(65536) == "64 KiB");
  CHECK(formatBytes(std::uint64_t{8} << 20) == "8 MiB");
  CHECK(formatBytes(std::uint64_t{3} << 29) == "1.5 GiB");
  CHECK(formatBytes(std::uint64_t{128} << 30) == "128 GiB");
  CHECK(formatBytes(std::uint64_t{2} << 40) == "2 TiB");
}
