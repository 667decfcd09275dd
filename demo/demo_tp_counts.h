#pragma once

// TpDemoCounts: what a tensor-parallel `kvx demo` run did, counted from the prefill ranks'
// reports and the decode ranks' STATS: prompts, the requests they became, scatters (a prefill
// rank's prompt sent to several decode ranks), gathers (decode requests filled by several
// prefill ranks), and which decode ranks received and verified every complete prompt.
// A pure function of DemoInputs.

#include <cstdint>
#include <string>
#include <vector>

#include "demo/demo_report.h"

namespace kvx::demo {

struct TpDemoCounts {
  std::uint64_t prompts = 0;
  std::uint64_t completePrompts = 0;  // every request of every rank for it released
  std::uint64_t requests = 0;
  std::uint64_t scatters = 0;
  std::uint64_t gathers = 0;
  std::uint64_t ranksVerified = 0;      // decode ranks with every complete prompt, all verified
  std::vector<std::string> shortRanks;  // the others, each "name: what it had"
};

TpDemoCounts countTensorParallel(const DemoInputs& inputs);

}  // namespace kvx::demo
