#pragma once

// Latency statistics for request timings, in two forms:
//   LatencyRecorder   keeps every sample: exact figures, memory grows with the sample count.
//   LatencyHistogram  fixed log-linear buckets: constant memory, ~1.6% relative precision, and
//                     a JSON form so that processes can ship their histograms to one reporter.
// Percentiles use the nearest-rank definition on both: for p in [0, 100] and n samples sorted
// ascending, the p-th percentile is the sample of rank max(1, ceil(p * n / 100)) (1-based). So
// p0 is the minimum, p100 the maximum, and the result is always a value that was recorded (on
// the histogram: the upper bound of that value's bucket, never above the maximum seen).
// Negative durations are recorded as 0. Empty statistics report 0 everywhere.
// Not thread-safe: each object has one owner thread; merge() combines objects afterwards.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/result.h"

namespace kvx::workload {

struct LatencySummary {
  std::uint64_t count = 0;
  std::chrono::nanoseconds min{0};
  std::chrono::nanoseconds max{0};
  std::chrono::nanoseconds mean{0};  // rounded down to whole ns
  std::chrono::nanoseconds p50{0};
  std::chrono::nanoseconds p90{0};
  std::chrono::nanoseconds p99{0};
};

class LatencyRecorder {
 public:
  void add(std::chrono::nanoseconds duration);
  // Appends `other`'s samples.
  void merge(const LatencyRecorder& other);

  std::uint64_t count() const { return samples_.size(); }
  std::chrono::nanoseconds min() const;
  std::chrono::nanoseconds max() const;
  std::chrono::nanoseconds mean() const;
  // REQUIRES: 0 <= p <= 100 (clamped). O(n): selects on a copy of the samples.
  std::chrono::nanoseconds percentile(double p) const;
  // Every figure at once, from one sort of a copy of the samples.
  LatencySummary summary() const;

  // The samples in the order they were added (merge appends).
  std::span<const std::chrono::nanoseconds> samples() const { return samples_; }

 private:
  std::vector<std::chrono::nanoseconds> samples_;
  std::chrono::nanoseconds sum_{0};  // overflows only past 292 years in total
};

class LatencyHistogram {
 public:
  // Bucket layout: values below 2^kMinExponent ns (~1 us) share bucket 0, values at or above
  // 2^kMaxExponent ns (~137 s) share the last bucket, and each power of two in between is cut
  // into 2^kSubBucketBits equal buckets, so a bucket is at most 1/64 (1.6%) of its lower bound
  // wide. Between the two ends a percentile p satisfies exact <= p <= exact * (1 + 1/64).
  static constexpr int kSubBucketBits = 6;
  static constexpr int kMinExponent = 10;
  static constexpr int kMaxExponent = 37;
  static constexpr std::size_t kBucketCount =
      2 + (std::size_t{kMaxExponent - kMinExponent} << kSubBucketBits);

  LatencyHistogram();

  void add(std::chrono::nanoseconds duration);
  void merge(const LatencyHistogram& other);

  std::uint64_t count() const { return count_; }
  std::chrono::nanoseconds min() const;
  std::chrono::nanoseconds max() const;
  std::chrono::nanoseconds mean() const;
  // REQUIRES: 0 <= p <= 100 (clamped). The inclusive upper bound of the bucket holding the
  // nearest-rank sample, clamped to max().
  std::chrono::nanoseconds percentile(double p) const;
  LatencySummary summary() const;

  // {"format": "kvx-latency-histogram", "version": 1, "subBucketBits": 6, "minExponent": 10,
  //  "maxExponent": 37, "count": N, "minNs": .., "maxNs": .., "sumNs": ..,
  //  "buckets": [[index, count], ...]}  (only non-empty buckets, by ascending index)
  std::string toJson() const;
  // INVALID_ARGUMENT when the text is not such an object, has another bucket layout, or its
  // counts do not add up.
  static Result<LatencyHistogram> fromJson(std::string_view text);

  // The bucket a value of `ns` falls in, and the largest value in bucket `index`.
  static std::size_t bucketOf(std::uint64_t ns);
  static std::uint64_t bucketUpperBound(std::size_t index);

 private:
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  std::uint64_t minNs_ = 0;  // meaningful only when count_ > 0
  std::uint64_t maxNs_ = 0;
  std::uint64_t sumNs_ = 0;
};

}  // namespace kvx::workload
