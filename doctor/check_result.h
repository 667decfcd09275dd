#pragma once

// The vocabulary of a diagnosis: what one check found, whether that is fine, and what to do
// about it. Plain values, built by the check functions (doctor/*_checks.h) and printed by the
// report writers (doctor/report_text.h, doctor/report_json.h).

#include <string>
#include <string_view>
#include <vector>

namespace kvx::doctor {

enum class CheckState {
  kOk,             // what GPUDirect RDMA needs is there
  kWarning,        // it works, but slower or with a limit worth knowing
  kFailed,         // it stops GPUDirect RDMA; `fix` says what to do
  kUnknown,        // the system does not say (a file kvx cannot read); treated as no obstacle
  kNotApplicable,  // nothing to check (no GPU, no NIC)
};

// "ok", "warning", "failed", "unknown", "n/a": the words the JSON report uses.
std::string_view toString(CheckState state);

// The graver of two states: failed > warning > unknown > ok > n/a.
CheckState worse(CheckState a, CheckState b);

struct CheckResult {
  std::string id;     // stable key: "gpus", "peermem", "bar1", ...
  std::string title;  // what is checked, for people: "nvidia-peermem"
  CheckState state = CheckState::kUnknown;
  std::string found;                 // what was found, with the values that matter
  std::string fix;                   // what to do; empty when there is nothing to do
  std::vector<std::string> details;  // one line per device, port or pair
};

// One reason a GPU-NIC pair cannot use GPUDirect RDMA (or a caveat when it can), and its fix.
struct Reason {
  std::string check;  // the CheckResult::id it comes from
  std::string what;   // "nvidia-peermem is not loaded"
  std::string fix;    // "modprobe nvidia-peermem"
};

}  // namespace kvx::doctor
