#pragma once

// TraceSummary: the headline numbers of a trace, as `kvx demo`/`kvx bench` print them before a
// replay. Pure function; safe to call from any thread.

#include <cstdint>
#include <span>

#include "workload/trace_record.h"

namespace kvx::workload {

struct TraceSummary {
  std::uint64_t requests = 0;
  std::uint64_t totalInputTokens = 0;
  std::uint64_t totalOutputTokens = 0;
  double meanInputTokens = 0;  // 0 for an empty trace
  std::uint64_t maxInputTokens = 0;
  std::uint64_t durationMs = 0;      // last timestamp minus first; 0 for fewer than 2 requests
  std::uint64_t chunks = 0;          // hash ids over all requests
  std::uint64_t repeatedChunks = 0;  // hash ids equal to one seen earlier in the trace
  // repeatedChunks / chunks (0 without chunks): the share of prefix chunks an ideal cache
  // that never evicts would already hold.
  double repeatedChunkFraction = 0;
};

// "Earlier" is trace order: a record's ids count against every earlier record and against its
// own earlier ids.
TraceSummary summarize(std::span<const TraceRecord> records);

}  // namespace kvx::workload
