#pragma once

// kvx doctor: checks whether GPUDirect RDMA is usable on a machine and says, per check, what
// was found, whether it is OK and how to fix it, then gives a verdict per GPU-NIC pair and one
// for the machine. Everything is read through a root directory ("/" on a real machine, a
// fixture tree in tests); the UCX facts come from a UcxProbe (the loaded library, or the
// fixture's kvx-doctor-ucx.json). docs/gpu.md describes each check and fix.
//
// runDoctor only reads; it may be called from any thread.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "doctor/check_result.h"
#include "doctor/pair_verdict.h"
#include "doctor/system_facts.h"
#include "doctor/ucx_probe.h"
#include "doctor/verdict.h"
#include "kvx/result.h"

namespace kvx::doctor {

inline constexpr std::uint64_t kDefaultPoolBytes = std::uint64_t{2} << 30;

struct DoctorOptions {
  std::filesystem::path root = "/";
  std::uint64_t poolBytes = kDefaultPoolBytes;  // the memory kvx would register
  const UcxProbe* ucx = nullptr;  // null: makeUcxProbeFor(root); not owned, outlives the call
};

struct DoctorReport {
  SystemFacts facts;
  // gpus, rdma, peermem, bar1, iommu, topology, acs, hwloc, memlock, ucx: in that order.
  std::vector<CheckResult> checks;
  std::vector<PairVerdict> pairs;
  Verdict verdict;
};

// INVALID_ARGUMENT when the root is not a directory or the pool size is 0; otherwise every
// check runs, and whatever cannot be read is reported as unknown.
Result<DoctorReport> runDoctor(const DoctorOptions& options);

}  // namespace kvx::doctor
