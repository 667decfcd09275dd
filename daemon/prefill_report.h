#pragma once

// The report a prefill agent writes after replaying a workload (--report FILE). `kvx demo` and
// `kvx bench` read it back; these keys are the contract with them. One JSON object:
//   {"agent": name,
//    "requests": [{                      one per request, in trace order (a prompt's parts
//                                        by decode rank)
//       "index": the prompt's index in the trace, "id": the request id,
//       "destinationId": the decode side's id (the prompt's: "<prefix>-<index>"; a sliced
//                        part's id is "<destinationId>@d<decodeRank>"),
//       "decodeRank": the decode rank of a sliced part, -1 for a whole request,
//       "heads": KV heads a sliced part moves (0: whole blocks),
//       "tokens", "sourceBlocks", "prefixHashes", "mode" (push|pull), "layerwise",
//       "arrivalMs", "submittedAtMs", "waitedForBlocksMs": since the replay began,
//       "admission": the prompt's place in the order prompts got their prefill blocks (1:
//                    first; 0: none),
//       "submitNs": steady_clock ns of the submit() call, "doneNs": steady_clock ns when
//                   wait() returned it released or failed (daemon/report_clocks.h: comparable
//                   across the processes of one machine),
//       "submitted", "released", "error", "state", "status",
//       "peer": the decode agent, "placement": why there,
//       "blocks", "prefixBlocks", "bytes" (moved), "descriptors" (segments handed to the
//       engine), "operations" (after coalescing), "queuedNs", "latencyNs"}, ...],
//    "totals": {"requests", "prompts", "released", "failed", "submitted", "bytes",
//               "descriptors", "operations", "blocks", "prefixBlocks", "wallSeconds",
//               "stopped"},
//    "tp": {"size", "rank", "decodeSize", "totalHeads", "firstHead", "heads"},
//    "peers": [{"name", "dataPath", "totalBlocks", "compatible"}] as the replay ended,
//    "usageAtExit": {"totalBlocks", "freeBlocks", "freeExtents", "largestFreeExtent",
//                    "cachedPrefixBlocks"},
//    "cpuStart": {"userUs", "sysUs"}: process CPU time when the replay began,
//    "cpuEnd": {"userUs", "sysUs"}: when it ended, "cpu": the same as cpuEnd,
//    "readyCpuUs": of that, CPU spent readying peers' pools on the data path (once per peer)}

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/prefill_driver.h"

namespace kvx::daemon {

nlohmann::json usageJson(const KvPoolUsage& usage);

nlohmann::json replayReport(const std::string& agentName, const ReplayResult& result,
                            const TpPlan& tp, const std::vector<KvPeerStatus>& peers,
                            const KvPoolUsage& usageAtExit);

// Writes `json` (indented) to `path`; NOT_FOUND naming the path when it cannot be written.
Status writeJsonFile(const std::string& path, const nlohmann::json& json);

// Before a run: creates (or empties) the file an `option` (--report, --json) asks the run to
// write, so that a path that cannot be written fails the command at once, not after the run;
// INVALID_ARGUMENT naming the option, the path and the reason.
Status prepareOutputFile(const std::string& path, std::string_view option);

}  // namespace kvx::daemon
