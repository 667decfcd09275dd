#include "workload/trace_summary.h"

#include <algorithm>
#include <unordered_set>

namespace kvx::workload {

TraceSummary summarize(std::span<const TraceRecord> records) {
  TraceSummary summary;
  std::unordered_set<std::uint64_t> seen;
  std::uint64_t firstMs = 0;
  std::uint64_t lastMs = 0;
  for (const TraceRecord& record : records) {
    if (summary.requests == 0) firstMs = lastMs = record.timestampMs;
    firstMs = std::min(firstMs, record.timestampMs);
    lastMs = std::max(lastMs, record.timestampMs);
    ++summary.requests;
    summary.totalInputTokens += record.inputLength;
    summary.totalOutputTokens += record.outputLength;
    summary.maxInputTokens = std::max(summary.maxInputTokens, record.inputLength);
    for (std::uint64_t id : record.hashIds) {
      ++summary.chunks;
      if (!seen.insert(id).second) ++summary.repeatedChunks;
    }
  }
  summary.durationMs = lastMs - firstMs;
  if (summary.requests > 0) {
    summary.meanInputTokens =
        static_cast<double>(summary.totalInputTokens) / static_cast<double>(summary.requests);
  }
  if (summary.chunks > 0) {
    summary.repeatedChunkFraction =
        static_cast<double>(summary.repeatedChunks) / static_cast<double>(summary.chunks);
  }
  return summary;
}

}  // namespace kvx::workload
