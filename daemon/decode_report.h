#pragma once

// The report a decode agent writes when it stops (--report FILE), for `kvx bench` and other
// tools that measure a run. One JSON object:
//   {"agent": name,
//    "arrivals": [{"id": the request id as the decode side sees it (a gather's destination id),
//                  "arrivedNs": steady_clock ns when nextArrival() returned it (see
//                               daemon/report_clocks.h; comparable with the prefill reports'
//                               submitNs/doneNs of the same machine),
//                  "blocks": blocks of the request (prefix-cache blocks included),
//                  "peers": [prefill agents that sent a part, in arrival order],
//                  "verifiedBlocks", "corruptBlocks": with --verify, else 0}, ...],
//    "verifiedBlocks", "corruptBlocks": totals,
//    "cpuStart": {"userUs", "sysUs"}: process CPU time when the serve loop began,
//    "cpuEnd":   {"userUs", "sysUs"}: process CPU time once the last arrival was handled
//                (at exit if none came),
//    "readyCpuUs": of that, CPU spent readying peers' pools on the data path (once per peer),
//    "cpu":      the same as cpuEnd}
// Plain data and pure functions.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/report_clocks.h"

namespace kvx::daemon {

struct ArrivalRecord {
  std::string id;
  std::int64_t arrivedNs = 0;
  std::uint64_t blocks = 0;
  std::vector<std::string> peers;
  std::uint64_t verifiedBlocks = 0;
  std::uint64_t corruptBlocks = 0;
};

nlohmann::json decodeReport(const std::string& agentName,
                            const std::vector<ArrivalRecord>& arrivals, const CpuTime& cpuStart,
                            const CpuTime& cpuEnd, std::int64_t readyCpuUs);

}  // namespace kvx::daemon
