#pragma once

// The overall verdict: one line that says whether GPUDirect RDMA is usable on this machine,
// what that means for kvx, which NICs each GPU should use, and each distinct fix with the pairs
// it would unblock. On a machine without GPU or RDMA device it says so plainly ("no GPU visible",
// "no RDMA device") and that kvx then moves host memory only.

#include <string>
#include <vector>

#include "doctor/check_result.h"
#include "doctor/pair_verdict.h"
#include "doctor/system_facts.h"

namespace kvx::doctor {

// A fix and the pairs it would unblock.
struct Remedy {
  std::string check;  // the CheckResult::id it comes from
  std::string fix;
  std::size_t pairs = 0;  // how many pairs name it
  std::string example;    // the first such pair's reason
};

struct Verdict {
  bool usable = false;  // GPUDirect RDMA usable for at least one GPU-NIC pair
  std::string summary;  // "GPUDirect RDMA usable for 8 of 64 GPU-NIC pairs", "no GPU visible"
  std::string meaning;  // what kvx does as a result
  std::vector<std::string> choices;  // per GPU, the NIC to use: "GPU 0: mlx5_0"
  std::vector<Remedy> fixes;         // each distinct fix of the pairs' blockers, once
};

Verdict summarize(const SystemFacts& facts, const std::vector<PairVerdict>& pairs);

}  // namespace kvx::doctor
