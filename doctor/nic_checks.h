#pragma once

// The check about the RDMA NICs: which there are, where they sit, and whether their ports are
// up (state, rate, link layer, GID), cross-checked with libibverbs on the real root.

#include "doctor/check_result.h"
#include "doctor/system_facts.h"

namespace kvx::doctor {

// "rdma". Failed when GPUs exist but no NIC does, or no NIC has an ACTIVE port; a warning when
// some NICs are down or a RoCE port has no GID; n/a when there is neither GPU nor NIC.
CheckResult checkRdma(const SystemFacts& facts);

inline constexpr const char* kPortDownFix =
    "bring the port up: check the cable and the switch port, and for InfiniBand that a subnet "
    "manager runs (`ibstat` shows the state)";

}  // namespace kvx::doctor
