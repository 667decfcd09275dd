#pragma once

// What `kvx bench` writes: the human table (one block per scenario: a row per case with kvx
// beside the bare loop and their ratio), the JSON document (header + every case with every
// figure) and the CSV (one row per case, the main figures). Pure formatting.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/kv/case_outcome.h"

namespace kvx::bench {

// The run's configuration, printed first and stored in the JSON.
struct RunHeader {
  std::vector<std::string> lines;  // "kvx 0.1.0, UCX 1.13.1 (UCX_TLS=sm,self ...)", ...
  nlohmann::json json;
};

std::string renderTable(const RunHeader& header, const std::vector<CaseOutcome>& outcomes,
                        bool verified);
nlohmann::json toJson(const RunHeader& header, const std::vector<CaseOutcome>& outcomes);
std::string toCsv(const std::vector<CaseOutcome>& outcomes);

}  // namespace kvx::bench
