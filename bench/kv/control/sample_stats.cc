#include "bench/kv/control/sample_stats.h"

#include <algorithm>
#include <numeric>

namespace kvx::bench {

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.count = n;
  s.min = samples.front();
  s.max = samples.back();
  s.p50 = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  return s;
}

}  // namespace kvx::bench
