#pragma once

// TraceRecord: one request of a KV-cache workload trace, in the Mooncake trace format
// (one JSON object per line: "timestamp" ms, "input_length", "output_length", "hash_ids").
// The prompt is cut into chunks of kPrefixChunkTokens tokens; hashIds[i] names chunk i, and
// two requests whose first k ids are equal share their first k chunks (a cached prefix).
// The last chunk may be partial; a trace may list fewer ids than chunks, never more.

#include <cstdint>
#include <vector>

namespace kvx::workload {

constexpr std::uint32_t kPrefixChunkTokens = 512;

struct TraceRecord {
  std::uint64_t timestampMs = 0;   // arrival time, from the start of the trace
  std::uint64_t inputLength = 0;   // prompt tokens (> 0)
  std::uint64_t outputLength = 0;  // generated tokens
  std::vector<std::uint64_t> hashIds;

  friend bool operator==(const TraceRecord&, const TraceRecord&) = default;
};

// Chunks of a prompt of `inputLength` tokens: ceil(inputLength / kPrefixChunkTokens).
constexpr std::uint64_t chunkCount(std::uint64_t inputLength) {
  return inputLength / kPrefixChunkTokens + (inputLength % kPrefixChunkTokens != 0 ? 1 : 0);
}

}  // namespace kvx::workload
