#pragma once

// `kvx bench --plot FILE.png`: two panels drawn by gnuplot (Debian's gnuplot-nox): the CDF
// of post -> receiver-notification latency per case, and GB/s against the operation size on
// the wire for kvx and the bare UCP loop. Needs the `gnuplot` binary; FAILED_PRECONDITION
// says how to install it when it is missing.

#include <string>
#include <vector>

#include "bench/kv/case_outcome.h"

namespace kvx::bench {

Status writePlot(const std::vector<CaseOutcome>& outcomes, const std::string& pngPath);

}  // namespace kvx::bench
