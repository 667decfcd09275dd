#pragma once

// The report a prefill agent writes after replaying a workload (--report FILE): one JSON
// object {"agent", "requests": [RequestRecord...], "totals": {...}, "peers": [...],
// "usageAtExit": {...}}.
// `kvx demo` reads it back; the field names are the contract between the two.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/prefill_driver.h"

namespace kvx::cli {

nlohmann::json usageJson(const KvPoolUsage& usage);

// totals: requests, released, failed, submitted, bytes, descriptors, operations, blocks,
// prefixBlocks, wallSeconds, stopped. peers: [{name, dataPath, totalBlocks, compatible}] as the
// replay ended.
nlohmann::json replayReport(const std::string& agentName, const ReplayResult& result,
                            const std::vector<KvPeerStatus>& peers, const KvPoolUsage& usageAtExit);

// Writes `json` (indented) to `path`; NOT_FOUND naming the path when it cannot be written.
Status writeJsonFile(const std::string& path, const nlohmann::json& json);

}  // namespace kvx::cli
