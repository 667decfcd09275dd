#pragma once

// The benchmark scenarios of WORKLOADS.md, by their stable names, expanded into cases:
//   llama8b       8B TP1 shape: prompt sizes x requests in flight x contiguous/random source
//                 blocks x PUSH/PULL (bulk transfer, coalescing)
//   llama70b-tp8  one TP8 rank's 4 KiB segments, contiguous vs random (per-descriptor cost)
//   hetero-tp     prefill TP4 -> decode TP8 and TP8 -> TP4 (strided head slices, gathers)
//   mla           DeepSeek-V3's latent cache, plus the fixed overhead of a 1-block request
//   long-context  32k-token prompts (64k with --full) in the cross-layer layout
//   trace         a JSONL trace replayed at 1x/4x/16x with 32 requests in flight
//   incast        4 and 8 prefill agents into 1 decode agent, and 1 into 4
//   layerwise     layers handed over as a simulated prefill computes them, vs all at once
//   token-pages   SGLang-style pages of 1 token (2 KiB segments; 256 B per TP8 rank)
// (`control`, the control-plane timings, is not a transfer scenario; see docs/benchmarks.md.)
// Sizes fit this machine by default (a few GiB per agent); --full runs the whole matrix of
// WORKLOADS.md where memory allows, --quick shrinks every case to a smoke run of seconds.
// Pure functions.

#include <string>
#include <vector>

#include "bench/kv/bench_case.h"
#include "kvx/result.h"

namespace kvx::bench {

enum class ScenarioSize : std::uint8_t { kQuick, kDefault, kFull };

struct ScenarioOptions {
  std::vector<std::string> transports = {"shm"};
  ScenarioSize size = ScenarioSize::kDefault;
  std::string trace;                   // for "trace": the JSONL file (required there)
  double layerMs = 8;                  // "layerwise": simulated compute per layer
  std::uint64_t poolBudgetMiB = 6144;  // per agent: caps requests in flight
  bool verify = true;
};

std::vector<std::string> scenarioNames();

// The cases of scenario `name`. NOT_FOUND lists the names; INVALID_ARGUMENT when "trace"
// has no trace file.
Result<std::vector<BenchCase>> scenarioCases(const std::string& name,
                                             const ScenarioOptions& options);

}  // namespace kvx::bench
