#pragma once

// CaseOutcome: everything `kvx bench` learned about one case: the kvx run (or why it could
// not run), the bare reference beside it (or why there is none), and the ratio between them.
// Plain data.

#include <optional>
#include <string>

#include "bench/bare/bare_ucp_result.h"
#include "bench/kv/bench_case.h"
#include "bench/kv/case_runner.h"

namespace kvx::bench {

struct CaseOutcome {
  BenchCase benchCase;
  std::optional<CaseRun> kvx;         // empty when the case could not run
  Status error;                       // why, then
  std::optional<BareUcpResult> bare;  // empty when not run (or failed: bareError)
  Status bareError;

  // kvx GB/s over bare GB/s; 0 without both.
  double ratio() const {
    if (!kvx || !bare || bare->gbps <= 0) return 0;
    return kvx->metrics.gbps / bare->gbps;
  }
  // Every request released, every block verified (if verifying), no process trouble.
  bool clean() const {
    return kvx && kvx->metrics.failed == 0 && kvx->metrics.corruptBlocks == 0 &&
           kvx->problems.empty() && kvx->metrics.released > 0;
  }
};

}  // namespace kvx::bench
