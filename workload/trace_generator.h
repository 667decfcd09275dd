#pragma once

// Synthetic request traces with realistic prefix reuse, for `kvx demo` and `kvx bench` when no
// recorded trace is given.
//
// The model, request by request (requests are independent of each other):
//   - arrivals: a Poisson process of `requestsPerSecond` (exponential gaps, timestamps floored
//     to whole ms); the first request arrives at 0. With requestsPerSecond == 0 all arrive at 0.
//   - input length: log-uniform over [minInputTokens, maxInputTokens].
//   - output length: 1 + an exponential of mean (meanOutputTokens - 1), rounded; 0 when
//     meanOutputTokens is 0.
//   - prefix sharing: with probability prefixShareProbability the request starts with one of
//     `sharedPrefixes` fixed prefixes (picked uniformly). Prefix p is a whole number of
//     512-token chunks, drawn uniformly from 1 .. min(maxSharedPrefixTokens,
//     maxInputTokens) / 512 chunks once per trace. A sharing request shorter than its prefix is
//     lengthened to the prefix length. Its hash ids are the prefix's fixed ids for the prefix's
//     chunks, then fresh ids for the rest.
//   - hash ids: the prefixes' ids are 0 .. S-1; every fresh id is S, S+1, ... in order of
//     use, so a fresh id never equals a shared one or another fresh one.
//
// Deterministic: the same options give the same trace. All distributions are computed here
// from raw std::mt19937_64 draws (std:: distributions differ between standard libraries).
// Pure function; safe to call from any thread.

#include <cstdint>
#include <vector>

#include "kvx/result.h"
#include "workload/trace_record.h"

namespace kvx::workload {

struct TraceGeneratorOptions {
  std::uint64_t seed = 1;
  std::uint64_t requests = 100;          // 0 .. 10,000,000
  double requestsPerSecond = 10;         // Poisson arrivals; 0 = all at t=0
  std::uint64_t minInputTokens = 128;    // >= 1
  std::uint64_t maxInputTokens = 8192;   // >= minInputTokens, <= 10,000,000
  std::uint64_t meanOutputTokens = 256;  // <= 10,000,000
  // Probability that a request starts with a shared prefix (a system prompt, or a
  // conversation's earlier turns). In [0, 1].
  double prefixShareProbability = 0.5;
  std::uint32_t sharedPrefixes = 8;  // >= 1 when prefixShareProbability > 0; <= 100,000
  // Upper bound on a shared prefix's length; at least one 512-token chunk must fit under it
  // and under maxInputTokens when prefixShareProbability > 0.
  std::uint64_t maxSharedPrefixTokens = 4096;
};

// INVALID_ARGUMENT naming the option and its value when an option is out of range.
Result<std::vector<TraceRecord>> generateTrace(const TraceGeneratorOptions& options);

}  // namespace kvx::workload
