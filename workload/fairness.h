#pragma once

// Jain's fairness index over per-sender figures (goodput, completed requests):
//   J = (sum x)^2 / (n * sum x^2)
// 1.0 when every sender got the same, 1/n when one sender got everything.
// By convention it is 1.0 for no values and for all zeros (nobody was favoured).
// REQUIRES: values are finite and >= 0. Pure function; safe to call from any thread.

#include <span>

namespace kvx::workload {

double jainFairness(std::span<const double> values);

}  // namespace kvx::workload
