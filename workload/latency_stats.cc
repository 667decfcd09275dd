#include "workload/latency_stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvx::workload {
namespace {

using std::chrono::nanoseconds;

// 1-based nearest rank of percentile p among n > 0 samples. p * n is exact for any realistic
// n, so whole ranks (p90 of 10 samples) do not drift up by a rounding error.
std::uint64_t nearestRank(double p, std::uint64_t n) {
  const double clamped = std::isnan(p) ? 0.0 : std::clamp(p, 0.0, 100.0);
  const double rank = std::ceil(clamped * static_cast<double>(n) / 100.0);
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(rank), 1, n);
}

std::uint64_t toNs(nanoseconds duration) {
  return duration.count() < 0 ? 0 : static_cast<std::uint64_t>(duration.count());
}

nanoseconds fromNs(std::uint64_t ns) {
  return nanoseconds(static_cast<nanoseconds::rep>(
      std::min<std::uint64_t>(ns, std::numeric_limits<nanoseconds::rep>::max())));
}

constexpr const char* kFormat = "kvx-latency-histogram";
constexpr int kVersion = 1;

}  // namespace

void LatencyRecorder::add(nanoseconds duration) {
  duration = std::max(duration, nanoseconds(0));
  samples_.push_back(duration);
  sum_ += duration;
}

void LatencyRecorder::merge(const LatencyRecorder& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
  sum_ += other.sum_;
}

nanoseconds LatencyRecorder::min() const {
  if (samples_.empty()) return nanoseconds(0);
  return *std::min_element(samples_.begin(), samples_.end());
}

nanoseconds LatencyRecorder::max() const {
  if (samples_.empty()) return nanoseconds(0);
  return *std::max_element(samples_.begin(), samples_.end());
}

nanoseconds LatencyRecorder::mean() const {
  if (samples_.empty()) return nanoseconds(0);
  return sum_ / static_cast<nanoseconds::rep>(samples_.size());
}

nanoseconds LatencyRecorder::percentile(double p) const {
  if (samples_.empty()) return nanoseconds(0);
  std::vector<nanoseconds> copy = samples_;
  auto nth = copy.begin() + static_cast<std::ptrdiff_t>(nearestRank(p, copy.size()) - 1);
  std::nth_element(copy.begin(), nth, copy.end());
  return *nth;
}

LatencySummary LatencyRecorder::summary() const {
  LatencySummary s;
  if (samples_.empty()) return s;
  std::vector<nanoseconds> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double p) { return sorted[nearestRank(p, sorted.size()) - 1]; };
  s.count = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = mean();
  s.p50 = at(50);
  s.p90 = at(90);
  s.p99 = at(99);
  return s;
}

LatencyHistogram::LatencyHistogram() : buckets_(kBucketCount, 0) {}

std::size_t LatencyHistogram::bucketOf(std::uint64_t ns) {
  if (ns < (std::uint64_t{1} << kMinExponent)) return 0;
  if (ns >= (std::uint64_t{1} << kMaxExponent)) return kBucketCount - 1;
  const int exponent = std::bit_width(ns) - 1;
  const std::uint64_t sub = (ns >> (exponent - kSubBucketBits)) - (1u << kSubBucketBits);
  return 1 + (static_cast<std::size_t>(exponent - kMinExponent) << kSubBucketBits) + sub;
}

std::uint64_t LatencyHistogram::bucketUpperBound(std::size_t index) {
  if (index == 0) return (std::uint64_t{1} << kMinExponent) - 1;
  if (index >= kBucketCount - 1) return std::numeric_limits<std::uint64_t>::max();
  const int exponent = kMinExponent + static_cast<int>((index - 1) >> kSubBucketBits);
  const std::uint64_t sub = (index - 1) & ((1u << kSubBucketBits) - 1);
  return (((std::uint64_t{1} << kSubBucketBits) + sub + 1) << (exponent - kSubBucketBits)) - 1;
}

void LatencyHistogram::add(nanoseconds duration) {
  const std::uint64_t ns = toNs(duration);
  ++buckets_[bucketOf(ns)];
  minNs_ = count_ == 0 ? ns : std::min(minNs_, ns);
  maxNs_ = count_ == 0 ? ns : std::max(maxNs_, ns);
  sumNs_ += ns;
  ++count_;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (std::size_t i = 0; i < kBucketCount; ++i) buckets_[i] += other.buckets_[i];
  minNs_ = count_ == 0 ? other.minNs_ : std::min(minNs_, other.minNs_);
  maxNs_ = count_ == 0 ? other.maxNs_ : std::max(maxNs_, other.maxNs_);
  sumNs_ += other.sumNs_;
  count_ += other.count_;
}

nanoseconds LatencyHistogram::min() const { return fromNs(count_ == 0 ? 0 : minNs_); }
nanoseconds LatencyHistogram::max() const { return fromNs(count_ == 0 ? 0 : maxNs_); }
nanoseconds LatencyHistogram::mean() const { return fromNs(count_ == 0 ? 0 : sumNs_ / count_); }

nanoseconds LatencyHistogram::percentile(double p) const {
  if (count_ == 0) return nanoseconds(0);
  const std::uint64_t rank = nearestRank(p, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return fromNs(std::min(bucketUpperBound(i), maxNs_));
  }
  return fromNs(maxNs_);  // unreachable while the counts add up
}

LatencySummary LatencyHistogram::summary() const {
  return {count_, min(), max(), mean(), percentile(50), percentile(90), percentile(99)};
}

std::string LatencyHistogram::toJson() const {
  nlohmann::json buckets = nlohmann::json::array();
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    if (buckets_[i] != 0) buckets.push_back({i, buckets_[i]});
  }
  nlohmann::ordered_json object;
  object["format"] = kFormat;
  object["version"] = kVersion;
  object["subBucketBits"] = kSubBucketBits;
  object["minExponent"] = kMinExponent;
  object["maxExponent"] = kMaxExponent;
  object["count"] = count_;
  object["minNs"] = count_ == 0 ? 0 : minNs_;
  object["maxNs"] = count_ == 0 ? 0 : maxNs_;
  object["sumNs"] = sumNs_;
  object["buckets"] = std::move(buckets);
  return object.dump();
}

Result<LatencyHistogram> LatencyHistogram::fromJson(std::string_view text) {
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    return invalidArgument("latency histogram: not a JSON object");
  }
  const auto format = object.find("format");
  if (format == object.end() || *format != kFormat) {
    return invalidArgument(std::string("latency histogram: 'format' must be \"") + kFormat + "\"");
  }
  auto number = [&](const char* field) -> Result<std::uint64_t> {
    auto it = object.find(field);
    if (it == object.end() || !it->is_number_unsigned()) {
      return invalidArgument(std::string("latency histogram: '") + field +
                             "' must be an unsigned integer");
    }
    return it->get<std::uint64_t>();
  };
  const std::pair<const char*, int> layout[] = {{"version", kVersion},
                                                {"subBucketBits", kSubBucketBits},
                                                {"minExponent", kMinExponent},
                                                {"maxExponent", kMaxExponent}};
  for (const auto& [field, expected] : layout) {
    KVX_ASSIGN_OR_RETURN(const std::uint64_t value, number(field));
    if (value != static_cast<std::uint64_t>(expected)) {
      return invalidArgument(std::string("latency histogram: '") + field + "' is " +
                             std::to_string(value) + ", this build reads only " +
                             std::to_string(expected));
    }
  }
  LatencyHistogram h;
  KVX_ASSIGN_OR_RETURN(h.count_, number("count"));
  KVX_ASSIGN_OR_RETURN(h.minNs_, number("minNs"));
  KVX_ASSIGN_OR_RETURN(h.maxNs_, number("maxNs"));
  KVX_ASSIGN_OR_RETURN(h.sumNs_, number("sumNs"));
  auto buckets = object.find("buckets");
  if (buckets == object.end() || !buckets->is_array()) {
    return invalidArgument("latency histogram: 'buckets' must be an array of [index, count]");
  }
  std::uint64_t total = 0;
  std::size_t nextIndex = 0;
  std::size_t position = 0;
  for (const nlohmann::json& pair : *buckets) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_unsigned() ||
        !pair[1].is_number_unsigned()) {
      // Not pair.dump(): it recurses, and a deeply nested bucket would overflow the stack.
      return invalidArgument("latency histogram: bucket " + std::to_string(position) +
                             " is not [index, count]");
    }
    ++position;
    const std::uint64_t index = pair[0].get<std::uint64_t>();
    const std::uint64_t count = pair[1].get<std::uint64_t>();
    if (index < nextIndex || index >= kBucketCount) {
      return invalidArgument("latency histogram: bucket index " + std::to_string(index) +
                             " is out of order or not below " + std::to_string(kBucketCount));
    }
    if (count > std::numeric_limits<std::uint64_t>::max() - total) {
      return invalidArgument("latency histogram: bucket counts overflow");
    }
    h.buckets_[index] = count;
    total += count;
    nextIndex = index + 1;
  }
  if (total != h.count_) {
    return invalidArgument("latency histogram: buckets hold " + std::to_string(total) +
                           " samples but 'count' is " + std::to_string(h.count_));
  }
  if (h.count_ > 0 && h.minNs_ > h.maxNs_) {
    return invalidArgument("latency histogram: 'minNs' " + std::to_string(h.minNs_) +
                           " exceeds 'maxNs' " + std::to_string(h.maxNs_));
  }
  return h;
}

}  // namespace kvx::workload
