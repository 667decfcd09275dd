#include "workload/trace_generator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace kvx::workload {
namespace {

constexpr std::uint64_t kMaxRequests = 10'000'000;
constexpr std::uint64_t kMaxTokens = 10'000'000;
constexpr std::uint32_t kMaxSharedPrefixes = 100'000;

// Distributions over raw 64-bit draws, so that a seed means the same trace everywhere
// (std::uniform_real_distribution and friends are implementation-defined).
class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1): the top 53 bits of a draw, scaled.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n). REQUIRES: n > 0 (n is small here, so the bias of scaling a
  // 53-bit fraction is far below anything a trace could show).
  std::uint64_t below(std::uint64_t n) {
    return std::min(n - 1, static_cast<std::uint64_t>(uniform() * static_cast<double>(n)));
  }

  // Exponential with the given mean; 1 - uniform() is in (0, 1], so the log is finite.
  double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }

  // Integer log-uniform over [low, high]: the log of the value is uniform over
  // [log low, log (high + 1)), so every integer keeps its share of its own width.
  std::uint64_t logUniform(std::uint64_t low, std::uint64_t high) {
    const double a = std::log(static_cast<double>(low));
    const double b = std::log(static_cast<double>(high) + 1.0);
    const auto value = static_cast<std::uint64_t>(std::exp(a + uniform() * (b - a)));
    return std::clamp(value, low, high);
  }

 private:
  std::mt19937_64 engine_;
};

Status invalidOption(const std::string& name, const std::string& requirement,
                     const std::string& value) {
  return invalidArgument("trace generator: " + name + " must be " + requirement + ", got " + value);
}

std::uint64_t prefixChunkLimit(const TraceGeneratorOptions& o) {
  return std::min(o.maxSharedPrefixTokens, o.maxInputTokens) / kPrefixChunkTokens;
}

Status validate(const TraceGeneratorOptions& o) {
  if (o.requests > kMaxRequests) {
    return invalidOption("requests", "<= 10000000", std::to_string(o.requests));
  }
  if (!(o.requestsPerSecond >= 0.0 && std::isfinite(o.requestsPerSecond))) {
    return invalidOption("requestsPerSecond", "finite and >= 0",
                         std::to_string(o.requestsPerSecond));
  }
  if (o.minInputTokens == 0) return invalidOption("minInputTokens", ">= 1", "0");
  if (o.maxInputTokens < o.minInputTokens || o.maxInputTokens > kMaxTokens) {
    return invalidOption("maxInputTokens",
                         "in minInputTokens (" + std::to_string(o.minInputTokens) + ") .. " +
                             std::to_string(kMaxTokens),
                         std::to_string(o.maxInputTokens));
  }
  if (o.meanOutputTokens > kMaxTokens) {
    return invalidOption("meanOutputTokens", "<= 10000000", std::to_string(o.meanOutputTokens));
  }
  if (!(o.prefixShareProbability >= 0.0 && o.prefixShareProbability <= 1.0)) {
    return invalidOption("prefixShareProbability", "in [0, 1]",
                         std::to_string(o.prefixShareProbability));
  }
  if (o.prefixShareProbability == 0.0) return Status::ok();
  if (o.sharedPrefixes == 0 || o.sharedPrefixes > kMaxSharedPrefixes) {
    return invalidOption("sharedPrefixes", "in 1..100000 when prefixShareProbability > 0",
                         std::to_string(o.sharedPrefixes));
  }
  if (prefixChunkLimit(o) == 0) {
    return invalidOption("min(maxSharedPrefixTokens, maxInputTokens)",
                         ">= " + std::to_string(kPrefixChunkTokens) +
                             " (one chunk) when prefixShareProbability > 0; set "
                             "prefixShareProbability to 0 for no sharing",
                         std::to_string(std::min(o.maxSharedPrefixTokens, o.maxInputTokens)));
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<TraceRecord>> generateTrace(const TraceGeneratorOptions& options) {
  KVX_RETURN_IF_ERROR(validate(options));
  Random random(options.seed);

  // The shared prefixes' chunk ids come first, so that fresh ids (counted up from
  // nextFreshId) can never collide with them.
  std::vector<std::vector<std::uint64_t>> prefixes;
  std::uint64_t nextFreshId = 0;
  if (options.prefixShareProbability > 0.0) {
    prefixes.resize(options.sharedPrefixes);
    for (auto& prefix : prefixes) {
      const std::uint64_t chunks = 1 + random.below(prefixChunkLimit(options));
      for (std::uint64_t c = 0; c < chunks; ++c) prefix.push_back(nextFreshId++);
    }
  }

  const double meanGapMs =
      options.requestsPerSecond > 0.0 ? 1000.0 / options.requestsPerSecond : 0.0;
  const double meanExtraOutput =
      options.meanOutputTokens > 0 ? static_cast<double>(options.meanOutputTokens - 1) : 0.0;
  double clockMs = 0.0;
  std::vector<TraceRecord> records;
  records.reserve(options.requests);
  for (std::uint64_t i = 0; i < options.requests; ++i) {
    // The same draws in the same order for every request, whatever the options, so that
    // changing one field's option does not reshuffle the other fields.
    const double gap = random.exponential(meanGapMs);
    const std::uint64_t drawnInput =
        random.logUniform(options.minInputTokens, options.maxInputTokens);
    const double extraOutput = random.exponential(meanExtraOutput);
    const bool shares = random.uniform() < options.prefixShareProbability;
    const std::uint64_t prefixIndex = random.below(std::max<std::size_t>(prefixes.size(), 1));

    if (i > 0) clockMs += gap;
    TraceRecord record;
    record.timestampMs = static_cast<std::uint64_t>(clockMs);
    record.inputLength = drawnInput;
    record.outputLength = options.meanOutputTokens > 0
                              ? 1 + static_cast<std::uint64_t>(std::llround(extraOutput))
                              : 0;
    if (shares) {
      const std::vector<std::uint64_t>& prefix = prefixes[prefixIndex];
      record.inputLength = std::max(record.inputLength, prefix.size() * kPrefixChunkTokens);
      record.hashIds = prefix;
    }
    const std::uint64_t chunks = chunkCount(record.inputLength);
    while (record.hashIds.size() < chunks) record.hashIds.push_back(nextFreshId++);
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace kvx::workload
