// kvx-test-labels: unit serial
#include "workload/fairness.h"

#include <catch2/catch.hpp>
#include <vector>

using kvx::workload::jainFairness;

namespace {

double jain(std::vector<double> values) { return jainFairness(values); }

}  // namespace

TEST_CASE("Jain's index on known vectors", "[fairness]") {
  CHECK(jain({5, 5, 5, 5}) == Approx(1.0));
  CHECK(jain({1, 0, 0, 0}) == Approx(0.25));  // one sender got everything: 1/n
  CHECK(jain({1, 2, 3}) == Approx(36.0 / 42.0));
  CHECK(jain({1, 1, 0, 0}) == Approx(0.5));
  CHECK(jain({7}) == Approx(1.0));
}

TEST_CASE("Jain's index is 1 for no values and for all zeros", "[fairness]") {
  CHECK(jain({}) == 1.0);
  CHECK(jain({0, 0, 0}) == 1.0);
}
