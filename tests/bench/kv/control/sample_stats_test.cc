// kvx-test-labels: unit serial
#include "bench/kv/control/sample_stats.h"

#include <catch2/catch.hpp>

using kvx::bench::summarize;

TEST_CASE("summarize gives count, min, median, max and mean", "[bench][control]") {
  const auto none = summarize({});
  CHECK(none.count == 0);
  CHECK(none.p50 == 0);
  CHECK(none.max == 0);

  const auto odd = summarize({5, 1, 3});
  CHECK(odd.count == 3);
  CHECK(odd.min == 1);
  CHECK(odd.p50 == 3);
  CHECK(odd.max == 5);
  CHECK(odd.mean == Approx(3));

  const auto even = summarize({4, 1, 2, 10});
  CHECK(even.p50 == Approx(3));  // the mean of the two middle samples
  CHECK(even.mean == Approx(4.25));

  const auto one = summarize({7.5});
  CHECK(one.min == 7.5);
  CHECK(one.p50 == 7.5);
  CHECK(one.max == 7.5);
}
