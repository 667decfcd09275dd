#pragma once

// SampleStats: the summary the `control` scenario prints for repeated measurements (fresh
// agent pairs, repeated transfers): count, min, median, max and mean. Pure; any thread.

#include <cstddef>
#include <vector>

namespace kvx::bench {

struct SampleStats {
  std::size_t count = 0;
  double min = 0;
  double p50 = 0;  // the median; the mean of the two middle samples for an even count
  double max = 0;
  double mean = 0;
};

// All zero for no samples.
SampleStats summarize(std::vector<double> samples);

}  // namespace kvx::bench
