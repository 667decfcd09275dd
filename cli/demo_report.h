#pragma once

// DemoReport: the KV migration latency report `kvx demo` prints, computed from the prefill
// agent's --report file and the decode agents' STATS lines, and the verdict: the demo passes
// only if every request was released, no block was corrupt, and every pool got all its blocks
// back. Plain data; one owner.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvx::cli {

struct DecodeOutcome {
  std::string name;
  std::string address;
  nlohmann::json stats;  // the STATS object; null when none was read
  int exitCode = -1;
};

struct DemoInputs {
  std::string title;       // one line: what was run
  nlohmann::json prefill;  // the --report object; null when none was written
  int prefillExitCode = -1;
  std::vector<DecodeOutcome> decodes;
  std::vector<std::string> problems;  // found while running (a process that did not start...)
};

class DemoReport {
 public:
  explicit DemoReport(DemoInputs inputs);

  // The human report, several aligned lines ending with "RESULT: PASS" or "RESULT: FAIL".
  std::string text() const;
  // The same figures as JSON (for --json).
  const nlohmann::json& json() const { return json_; }
  bool passed() const { return problems_.empty(); }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  void summarizeRequests();
  void summarizeDecodes();

  DemoInputs inputs_;
  nlohmann::json json_;
  std::vector<std::string> lines_;
  std::vector<std::string> problems_;
};

}  // namespace kvx::cli
