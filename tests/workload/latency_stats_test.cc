// kvx-test-labels: unit serial
#include "workload/latency_stats.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

using namespace kvx;
using namespace kvx::workload;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

// Log-uniform durations over [1.26 us, 10 s] (above the first bucket), from raw draws so the test
// is the same everywhere.
std::vector<nanoseconds> spreadSamples(std::uint64_t seed, int n) {
  std::mt19937_64 engine(seed);
  std::vector<nanoseconds> out;
  for (int i = 0; i < n; ++i) {
    const double u = static_cast<double>(engine() >> 11) * 0x1.0p-53;
    out.emplace_back(static_cast<std::int64_t>(std::pow(10.0, 3.1 + 6.9 * u)));
  }
  return out;
}

}  // namespace

TEST_CASE("recorder percentiles are nearest-rank on hand-computed data", "[latency]") {
  LatencyRecorder r;
  for (int ms : {7, 3, 10, 1, 5, 9, 2, 8, 6, 4}) r.add(milliseconds(ms));
  CHECK(r.count() == 10);
  CHECK(r.min() == milliseconds(1));
  CHECK(r.max() == milliseconds(10));
  CHECK(r.mean() == microseconds(5500));
  CHECK(r.percentile(0) == milliseconds(1));
  CHECK(r.percentile(10) == milliseconds(1));  // rank ceil(1.0) = 1
  CHECK(r.percentile(11) == milliseconds(2));  // rank ceil(1.1) = 2
  CHECK(r.percentile(50) == milliseconds(5));
  CHECK(r.percentile(90) == milliseconds(9));
  CHECK(r.percentile(99) == milliseconds(10));
  CHECK(r.percentile(100) == milliseconds(10));
  const LatencySummary s = r.summary();
  CHECK(s.count == 10);
  CHECK(s.p50 == milliseconds(5));
  CHECK(s.p90 == milliseconds(9));
  CHECK(s.p99 == milliseconds(10));
  CHECK(s.mean == microseconds(5500));
}

TEST_CASE("recorder percentiles over 1..100 and 1..1000", "[latency]") {
  LatencyRecorder hundred;
  for (int i = 100; i >= 1; --i) hundred.add(nanoseconds(i));
  CHECK(hundred.percentile(50) == nanoseconds(50));
  CHECK(hundred.percentile(90) == nanoseconds(90));
  CHECK(hundred.percentile(99) == nanoseconds(99));
  CHECK(hundred.percentile(99.5) == nanoseconds(100));
  LatencyRecorder thousand;
  for (int i = 1; i <= 1000; ++i) thousand.add(nanoseconds(i));
  CHECK(thousand.summary().p99 == nanoseconds(990));
  CHECK(thousand.percentile(99.9) == nanoseconds(999));
}

TEST_CASE("an empty recorder reports zeros; negative durations count as zero", "[latency]") {
  LatencyRecorder r;
  CHECK(r.count() == 0);
  CHECK(r.percentile(50) == nanoseconds(0));
  CHECK(r.summary().max == nanoseconds(0));
  r.add(nanoseconds(-5));
  CHECK(r.min() == nanoseconds(0));
}

TEST_CASE("merged recorders equal one recorder of all samples", "[latency]") {
  LatencyRecorder a, b, all;
  for (int i = 1; i <= 30; ++i) {
    (i % 3 == 0 ? a : b).add(microseconds(i * i));
    all.add(microseconds(i * i));
  }
  a.merge(b);
  CHECK(a.count() == 30);
  const LatencySummary merged = a.summary();
  const LatencySummary expected = all.summary();
  CHECK(merged.min == expected.min);
  CHECK(merged.max == expected.max);
  CHECK(merged.mean == expected.mean);
  CHECK(merged.p50 == expected.p50);
  CHECK(merged.p90 == expected.p90);
  CHECK(merged.p99 == expected.p99);
}

TEST_CASE("histogram buckets tile the range within 1/64", "[latency]") {
  using H = LatencyHistogram;
  CHECK(H::bucketOf(0) == 0);
  CHECK(H::bucketOf(1023) == 0);
  CHECK(H::bucketOf(1024) == 1);
  CHECK(H::bucketUpperBound(1) == 1039);  // [1024, 1040)
  CHECK(H::bucketOf(std::uint64_t{1} << 37) == H::kBucketCount - 1);
  for (std::size_t i = 1; i + 1 < H::kBucketCount; ++i) {
    const std::uint64_t low = H::bucketUpperBound(i - 1) + 1;
    const std::uint64_t high = H::bucketUpperBound(i);
    REQUIRE(H::bucketOf(low) == i);
    REQUIRE(H::bucketOf(high) == i);
    REQUIRE(static_cast<double>(high - low + 1) <= static_cast<double>(low) / 64.0);
  }
}

TEST_CASE("histogram percentiles are within its precision of the exact ones", "[latency]") {
  LatencyRecorder exact;
  LatencyHistogram histogram;
  for (nanoseconds d : spreadSamples(7, 20000)) {
    exact.add(d);
    histogram.add(d);
  }
  CHECK(histogram.count() == 20000);
  CHECK(histogram.min() == exact.min());
  CHECK(histogram.max() == exact.max());
  CHECK(histogram.mean() == exact.mean());
  for (double p : {0.0, 1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    const auto e = static_cast<double>(exact.percentile(p).count());
    const auto h = static_cast<double>(histogram.percentile(p).count());
    INFO("p" << p << " exact " << e << " histogram " << h);
    CHECK(h >= e);
    CHECK(h <= e * (1.0 + 1.0 / 64.0));
  }
}

TEST_CASE("histogram percentiles never exceed the maximum seen", "[latency]") {
  LatencyHistogram h;
  h.add(nanoseconds(500));
  h.add(microseconds(100));
  h.add(std::chrono::seconds(200));              // beyond the last bound
  CHECK(h.percentile(10) == nanoseconds(1023));  // below 1 us: the first bucket's bound
  CHECK(h.percentile(100) == std::chrono::seconds(200));
  CHECK(LatencyHistogram().percentile(50) == nanoseconds(0));
}

TEST_CASE("merged histograms equal one histogram of all samples", "[latency]") {
  LatencyHistogram a, b, all;
  const auto samples = spreadSamples(11, 5000);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    (i % 2 == 0 ? a : b).add(samples[i]);
    all.add(samples[i]);
  }
  a.merge(b);
  a.merge(LatencyHistogram());
  CHECK(a.toJson() == all.toJson());
}

TEST_CASE("a histogram survives JSON", "[latency]") {
  LatencyHistogram h;
  for (nanoseconds d : spreadSamples(3, 1000)) h.add(d);
  auto back = LatencyHistogram::fromJson(h.toJson());
  REQUIRE(back.isOk());
  CHECK(back->toJson() == h.toJson());
  CHECK(back->percentile(99) == h.percentile(99));
  auto empty = LatencyHistogram::fromJson(LatencyHistogram().toJson());
  REQUIRE(empty.isOk());
  CHECK(empty->count() == 0);
}

TEST_CASE("malformed histogram JSON is INVALID_ARGUMENT", "[latency]") {
  auto error = [](const std::string& text) {
    auto h = LatencyHistogram::fromJson(text);
    REQUIRE_FALSE(h.isOk());
    CHECK(h.status().code() == StatusCode::kInvalidArgument);
    return h.status().message();
  };
  const std::string head =
      R"({"format": "kvx-latency-histogram", "version": 1, "subBucketBits": 6,)"
      R"( "minExponent": 10, "maxExponent": 37, "minNs": 5, "maxNs": 9, "sumNs": 14,)";
  CHECK(LatencyHistogram::fromJson(head + R"( "count": 2, "buckets": [[0, 2]]})").isOk());
  CHECK_THAT(error("not json"), Catch::Contains("not a JSON object"));
  CHECK_THAT(error(head + R"( "count": 3, "buckets": [[0, 2]]})"), Catch::Contains("'count'"));
  CHECK_THAT(error(head + R"( "count": 2, "buckets": [[5, 1], [5, 1]]})"),
             Catch::Contains("out of order"));
  CHECK_THAT(error(head + R"( "count": 1, "buckets": [[99999, 1]]})"),
             Catch::Contains("out of order"));
  std::string otherLayout = head + R"( "count": 2, "buckets": [[0, 2]]})";
  otherLayout.replace(otherLayout.find("\"subBucketBits\": 6"), 18, "\"subBucketBits\": 7");
  CHECK_THAT(error(otherLayout), Catch::Contains("subBucketBits"));
}

TEST_CASE("histogram JSON with fields of the wrong kind is INVALID_ARGUMENT", "[latency]") {
  // A 'format' that is not a string must not escape as a nlohmann type_error.
  for (const char* text : {R"({"format": 0})", R"({"format": null, "version": 1})",
                           R"({"format": ["kvx-latency-histogram"]})"}) {
    INFO(text);
    auto h = LatencyHistogram::fromJson(text);
    CHECK(h.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(h.status().message(), Catch::Contains("'format'"));
  }
  // A deeply nested bucket is refused without dumping it (dump() recurses once per level).
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto h = LatencyHistogram::fromJson(
      R"({"format": "kvx-latency-histogram", "version": 1, "subBucketBits": 6, "minExponent": 10,)"
      R"( "maxExponent": 37, "count": 0, "minNs": 0, "maxNs": 0, "sumNs": 0, "buckets": [[0, 0], )" +
      deep + "]}");
  CHECK(h.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(h.status().message(), Catch::Contains("bucket 1 is not [index, count]"));
}
