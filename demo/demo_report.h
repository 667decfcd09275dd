#pragma once

// DemoReport: the KV migration latency report `kvx demo` prints, computed from the prefill
// agents' --report files and the decode agents' STATS lines, and the verdict: the demo passes
// only if every request was released, no block was corrupt, and every pool got all its blocks
// back; with tensor parallelism also only if every decode rank received and verified every
// prompt. Plain data; one owner.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kvx::demo {

struct DecodeOutcome {
  std::string name;
  std::string address;
  nlohmann::json stats;  // the STATS object; null when none was read
  int exitCode = -1;
};

struct PrefillOutcome {
  std::string name;
  nlohmann::json report;  // the --report object (daemon/prefill_report.h); null when none
  int exitCode = -1;
};

struct DemoInputs {
  std::string title;  // one line: what was run
  std::vector<PrefillOutcome> prefills;
  std::vector<DecodeOutcome> decodes;
  // Tensor parallelism: one prefill instance of prefillTp ranks sent to one decode instance
  // of decodeTp ranks (both 1: whole requests, placed by the scheduler).
  std::uint32_t prefillTp = 1;
  std::uint32_t decodeTp = 1;
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
  // Prompts, gathers and scatters, and whether every rank verified (demo/demo_tp_counts.h).
  void summarizeTensorParallel();

  DemoInputs inputs_;
  nlohmann::json json_;
  std::vector<std::string> lines_;
  std::vector<std::string> problems_;
};

}  // namespace kvx::demo
