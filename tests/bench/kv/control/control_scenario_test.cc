// kvx-test-labels: unit serial
#include "bench/kv/control/control_scenario.h"

#include <catch2/catch.hpp>

using kvx::bench::controlSizes;

TEST_CASE("control sizes: quick is small, the default is a realistic pool", "[bench][control]") {
  const auto quick = controlSizes(true);
  const auto full = controlSizes(false);
  // The WORKLOADS.md target is stated for a 16k-descriptor request, in both sizes.
  CHECK(quick.descriptors == 16384);
  CHECK(full.descriptors == 16384);
  CHECK(quick.poolBytes == std::vector<std::uint64_t>{64ull << 20});
  CHECK(full.poolBytes == std::vector<std::uint64_t>{1ull << 30, 4ull << 30});
  CHECK(quick.handshakePairs >= 3);
  CHECK(full.handshakePairs >= quick.handshakePairs);
  CHECK(quick.descriptorBytes.front() == 64);
  CHECK(full.descriptorBytes.back() == 32768);  // a llama3-8b segment
  CHECK(quick.abortBytes < full.abortBytes);
  CHECK(quick.deathWindow > 0);
  CHECK(quick.deathRequestTokens > 0);
}
