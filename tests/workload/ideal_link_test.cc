// kvx-test-labels: unit serial
#include "workload/ideal_link.h"

#include <catch2/catch.hpp>
#include <limits>
#include <vector>

using kvx::workload::idealFifoLink;
using kvx::workload::LinkJob;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {
constexpr double kGBps = 1e9;  // 1 byte per ns
}

TEST_CASE("ideal FIFO link: a lone request takes its bytes over the rate", "[workload]") {
  const std::vector<LinkJob> jobs{{milliseconds(5), 2'000'000}};
  auto latencies = idealFifoLink(jobs, kGBps);
  REQUIRE(latencies.isOk());
  REQUIRE(latencies->size() == 1);
  CHECK((*latencies)[0] == milliseconds(2));
}

TEST_CASE("ideal FIFO link: a burst queues in arrival order, gaps let the link idle",
          "[workload]") {
  // Given out of arrival order: the one at 0 goes first, then the two at 1 ms in input order.
  const std::vector<LinkJob> jobs{{milliseconds(1), 3'000'000},
                                  {milliseconds(0), 2'000'000},
                                  {milliseconds(1), 1'000'000},
                                  {milliseconds(100), 1'000'000}};
  auto latencies = idealFifoLink(jobs, kGBps);
  REQUIRE(latencies.isOk());
  REQUIRE(latencies->size() == 4);
  CHECK((*latencies)[1] == milliseconds(2));  // 0 -> 2
  CHECK((*latencies)[0] == milliseconds(4));  // waits until 2, done at 5, arrived at 1
  CHECK((*latencies)[2] == milliseconds(5));  // done at 6, arrived at 1
  CHECK((*latencies)[3] == milliseconds(1));  // the link was idle from 6 to 100
}

TEST_CASE("ideal FIFO link: empty requests and empty input", "[workload]") {
  const std::vector<LinkJob> jobs{{milliseconds(0), 4'000'000}, {milliseconds(1), 0}};
  auto latencies = idealFifoLink(jobs, kGBps);
  REQUIRE(latencies.isOk());
  CHECK((*latencies)[1] == milliseconds(3));  // nothing to move, but it waits its turn
  auto none = idealFifoLink({}, kGBps);
  REQUIRE(none.isOk());
  CHECK(none->empty());
}

TEST_CASE("ideal FIFO link: a rate that is not positive and finite is refused", "[workload]") {
  const std::vector<LinkJob> jobs{{nanoseconds(0), 1}};
  for (double rate : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                      std::numeric_limits<double>::quiet_NaN()}) {
    auto latencies = idealFifoLink(jobs, rate);
    REQUIRE_FALSE(latencies.isOk());
    CHECK(latencies.status().code() == kvx::StatusCode::kInvalidArgument);
    CHECK_THAT(latencies.status().message(), Catch::Contains("positive, finite rate"));
  }
}
