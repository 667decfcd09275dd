#pragma once

// CaseRunner: runs one BenchCase with real `kvx agent` processes, as a deployment would run
// them: the decode agents (verifying every block unless the case says not to), then the
// prefill agents replaying fixed-size prompts (or a trace) into them; it waits for the
// replays, stops the decode agents, reads every report and computes the case's metrics.
// Pools are sized for the case's requests in flight (see poolBlocks()).
//
// One owner thread; runs block for the length of the case.

#include <chrono>
#include <string>
#include <vector>

#include "bench/kv/bench_case.h"
#include "bench/kv/case_metrics.h"
#include "kv/pool/model_shape.h"
#include "kvx/result.h"
#include "kvx/transfer.h"

namespace kvx::bench {

// Blocks every pool holds beyond the requests it is sized for.
inline constexpr std::uint64_t kPoolSlackBlocks = 16;

struct CaseRunnerOptions {
  std::string kvxBinary;  // the `kvx` executable (normally /proc/self/exe)
  std::string workDir;    // reports and model files go here
  std::string logLevel = "warn";
  std::chrono::seconds timeout{600};  // per case
};

struct CaseRun {
  CaseMetrics metrics;
  std::vector<std::string> problems;  // agents that failed to start or exited badly
  std::vector<std::string> notes;     // what a reader should know ("3 prompts clipped ...")
  std::uint64_t segmentBytes = 0;     // one (block, layer, K or V) segment of the model
  // What the prefill agents reported: the data path to each decode agent (distinct texts,
  // Agent::dataPathDescription) and, for GPU pools, their GPU runtime.
  std::vector<std::string> dataPaths;
  std::string gpuRuntime;
};

class CaseRunner {
 public:
  explicit CaseRunner(CaseRunnerOptions options) : options_(std::move(options)) {}

  // Errors only for a case that could not run at all (bad model, no agent started).
  Result<CaseRun> run(const BenchCase& c) const;

  // Blocks a pool needs to hold `window` requests of `tokens` tokens each (plus slack),
  // bounded by `budgetBytes` (0: no bound) but never below one request (plus slack).
  static std::uint64_t poolBlocks(const kv::ModelShape& shape, std::uint64_t tokens,
                                  std::uint64_t window, std::uint64_t budgetBytes);

 private:
  CaseRunnerOptions options_;
};

}  // namespace kvx::bench
