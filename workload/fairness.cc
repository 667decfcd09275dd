#include "workload/fairness.h"

namespace kvx::workload {

double jainFairness(std::span<const double> values) {
  double sum = 0.0;
  double sumOfSquares = 0.0;
  for (double x : values) {
    sum += x;
    sumOfSquares += x * x;
  }
  if (values.empty() || sumOfSquares == 0.0) return 1.0;
  return (sum * sum) / (static_cast<double>(values.size()) * sumOfSquares);
}

}  // namespace kvx::workload
