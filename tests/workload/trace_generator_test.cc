// kvx-test-labels: unit serial
#include "workload/trace_generator.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "workload/trace_reader.h"
#include "workload/trace_summary.h"
#include "workload/trace_writer.h"

using namespace kvx;
using namespace kvx::workload;

namespace {

std::vector<TraceRecord> generate(const TraceGeneratorOptions& options) {
  auto trace = generateTrace(options);
  REQUIRE(trace.isOk());
  return std::move(trace).value();
}

}  // namespace

TEST_CASE("the same seed gives the same trace, another seed another", "[trace]") {
  TraceGeneratorOptions options;
  options.seed = 42;
  const auto first = generate(options);
  CHECK(first.size() == 100);
  CHECK(generate(options) == first);
  options.seed = 43;
  CHECK(generate(options) != first);
}

TEST_CASE("generated records satisfy the trace format and the bounds", "[trace]") {
  TraceGeneratorOptions options;
  options.requests = 2000;
  options.minInputTokens = 100;
  options.maxInputTokens = 20000;
  const auto trace = generate(options);
  REQUIRE(trace.size() == 2000);
  CHECK(trace.front().timestampMs == 0);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceRecord& r = trace[i];
    CHECK(r.inputLength >= 100);
    CHECK(r.inputLength <= 20000);
    CHECK(r.hashIds.size() == chunkCount(r.inputLength));
    if (i > 0) CHECK(r.timestampMs >= trace[i - 1].timestampMs);
  }
  // Whatever the generator writes, the reader accepts.
  std::string text;
  for (const TraceRecord& r : trace) text += toJsonLine(r) + "\n";
  auto back = parseTrace(text, "generated");
  REQUIRE(back.isOk());
  CHECK(*back == trace);
}

TEST_CASE("generated distributions have the configured centres", "[trace]") {
  TraceGeneratorOptions options;
  options.requests = 4000;
  options.requestsPerSecond = 100;
  options.minInputTokens = 100;
  options.maxInputTokens = 10000;
  options.meanOutputTokens = 200;
  options.prefixShareProbability = 0;
  const auto trace = generate(options);
  const TraceSummary summary = summarize(trace);
  // 4000 requests at 100/s span about 40 s (Poisson: within a few percent).
  CHECK(summary.durationMs > 37'000);
  CHECK(summary.durationMs < 43'000);
  CHECK(static_cast<double>(summary.totalOutputTokens) / 4000 == Approx(200).epsilon(0.08));
  // Log-uniform over [100, 10000]: the median is near sqrt(100 * 10000) = 1000.
  std::vector<std::uint64_t> inputs;
  for (const TraceRecord& r : trace) inputs.push_back(r.inputLength);
  std::nth_element(inputs.begin(), inputs.begin() + 2000, inputs.end());
  CHECK(inputs[2000] > 850);
  CHECK(inputs[2000] < 1150);
  // Without sharing every chunk id is fresh.
  CHECK(summary.repeatedChunks == 0);
}

TEST_CASE("zero requests per second puts every arrival at 0", "[trace]") {
  TraceGeneratorOptions options;
  options.requestsPerSecond = 0;
  for (const TraceRecord& r : generate(options)) CHECK(r.timestampMs == 0);
}

TEST_CASE("shared prefixes repeat whole chunks and fresh ids never collide", "[trace]") {
  TraceGeneratorOptions options;
  options.requests = 1000;
  options.prefixShareProbability = 0.5;
  options.sharedPrefixes = 4;
  options.maxSharedPrefixTokens = 2048;
  const auto trace = generate(options);

  // The ids that occur in more than one request are exactly the shared prefixes' ids, and
  // they always form a request's leading chunks.
  std::map<std::uint64_t, int> uses;
  for (const TraceRecord& r : trace) {
    for (std::uint64_t id : r.hashIds) ++uses[id];
  }
  std::set<std::vector<std::uint64_t>> prefixes;
  std::uint64_t sharing = 0;
  for (const TraceRecord& r : trace) {
    std::size_t shared = 0;
    while (shared < r.hashIds.size() && uses[r.hashIds[shared]] > 1) ++shared;
    for (std::size_t i = shared; i < r.hashIds.size(); ++i) CHECK(uses[r.hashIds[i]] == 1);
    if (shared == 0) continue;
    ++sharing;
    CHECK(shared <= 4);  // 2048 tokens
    CHECK(r.inputLength >= shared * kPrefixChunkTokens);
    prefixes.insert({r.hashIds.begin(), r.hashIds.begin() + static_cast<std::ptrdiff_t>(shared)});
  }
  CHECK(sharing > 400);
  CHECK(sharing < 600);
  CHECK(prefixes.size() <= 4);
  CHECK(summarize(trace).repeatedChunkFraction > 0.05);
}

TEST_CASE("a request that always shares the one prefix starts with its ids", "[trace]") {
  TraceGeneratorOptions options;
  options.prefixShareProbability = 1;
  options.sharedPrefixes = 1;
  options.maxSharedPrefixTokens = 4096;
  const auto trace = generate(options);
  const std::size_t first = trace[0].hashIds.size();
  std::size_t prefix = first;
  for (const TraceRecord& r : trace) {
    std::size_t common = 0;
    while (common < std::min(prefix, r.hashIds.size()) &&
           r.hashIds[common] == trace[0].hashIds[common]) {
      ++common;
    }
    prefix = common;
  }
  CHECK(prefix >= 1);
  CHECK(prefix <= 8);
  for (const TraceRecord& r : trace) CHECK(r.inputLength >= prefix * kPrefixChunkTokens);
}

TEST_CASE("bad generator options are INVALID_ARGUMENT naming the option", "[trace]") {
  auto error = [](const TraceGeneratorOptions& options) {
    auto trace = generateTrace(options);
    REQUIRE_FALSE(trace.isOk());
    CHECK(trace.status().code() == StatusCode::kInvalidArgument);
    return trace.status().message();
  };
  TraceGeneratorOptions o;
  o.minInputTokens = 0;
  CHECK_THAT(error(o), Catch::Contains("minInputTokens"));
  o = {};
  o.maxInputTokens = 64;
  CHECK_THAT(error(o), Catch::Contains("maxInputTokens"));
  o = {};
  o.requestsPerSecond = -1;
  CHECK_THAT(error(o), Catch::Contains("requestsPerSecond"));
  o = {};
  o.prefixShareProbability = 1.5;
  CHECK_THAT(error(o), Catch::Contains("prefixShareProbability"));
  o = {};
  o.sharedPrefixes = 0;
  CHECK_THAT(error(o), Catch::Contains("sharedPrefixes"));
  o = {};
  o.maxSharedPrefixTokens = 100;
  CHECK_THAT(error(o), Catch::Contains("maxSharedPrefixTokens"));
  o.prefixShareProbability = 0;  // no sharing: the prefix options do not matter
  CHECK(generateTrace(o).isOk());
  o = {};
  o.requests = 0;
  CHECK(generateTrace(o)->empty());
}
