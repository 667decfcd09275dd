#pragma once

// `kvx bench --scenario sweep`: a free sweep like nixlbench's, segment size x segments per
// request x requests in flight, PUSH (write) or PULL (read), over real agents. Each segment
// size becomes a one-layer MLA-like model whose block is a single segment of that size, so
// a request of K blocks is exactly K segments; source blocks are passed in random order
// unless --sweep-order contiguous, so what is swept is not hidden by coalescing.

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kv/bench_case.h"
#include "kvx/result.h"

namespace kvx::bench {

struct SweepOptions {
  std::vector<std::uint64_t> segmentBytes = {4096, 32768, 262144};
  std::vector<std::uint64_t> segments = {64, 1024};
  std::vector<std::uint64_t> windows = {1, 8};
  std::vector<std::string> modes = {"push", "pull"};
  std::string order = "random";
  std::uint64_t bytesPerCase = 1ull << 30;  // requests per case: about this much data
  std::uint64_t requests = 0;  // requests per case, exactly; 0: from bytesPerCase (4 to 2000)
};

// The most --sweep-requests takes: a long steady run, not an unbounded one.
inline constexpr std::uint64_t kMaxSweepRequests = 1'000'000;

// INVALID_ARGUMENT for a segment size that is not a multiple of 32 bytes or is 0, or more
// requests than kMaxSweepRequests.
Result<std::vector<BenchCase>> sweepCases(const SweepOptions& options);

}  // namespace kvx::bench
