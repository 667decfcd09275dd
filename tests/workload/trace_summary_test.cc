// kvx-test-labels: unit serial
#include "workload/trace_summary.h"

#include <catch2/catch.hpp>

using namespace kvx::workload;

TEST_CASE("a summary matches hand-computed figures", "[trace]") {
  const std::vector<TraceRecord> trace = {
      {100, 1000, 10, {1, 2}},
      {150, 600, 20, {1, 3}},         // 1 repeats
      {400, 2000, 30, {1, 2, 3, 4}},  // 1, 2, 3 repeat
      {400, 5, 0, {5}},
  };
  const TraceSummary s = summarize(trace);
  CHECK(s.requests == 4);
  CHECK(s.totalInputTokens == 3605);
  CHECK(s.totalOutputTokens == 60);
  CHECK(s.meanInputTokens == Approx(901.25));
  CHECK(s.maxInputTokens == 2000);
  CHECK(s.durationMs == 300);
  CHECK(s.chunks == 9);
  CHECK(s.repeatedChunks == 4);
  CHECK(s.repeatedChunkFraction == Approx(4.0 / 9.0));
}

TEST_CASE("an id repeated within one request counts as a repeat", "[trace]") {
  const std::vector<TraceRecord> trace = {{0, 2048, 1, {7, 7, 8, 7}}};
  const TraceSummary s = summarize(trace);
  CHECK(s.repeatedChunks == 2);
  CHECK(s.durationMs == 0);
}

TEST_CASE("an empty trace summarizes to zeros", "[trace]") {
  const TraceSummary s = summarize({});
  CHECK(s.requests == 0);
  CHECK(s.meanInputTokens == 0);
  CHECK(s.durationMs == 0);
  CHECK(s.repeatedChunkFraction == 0);
}
