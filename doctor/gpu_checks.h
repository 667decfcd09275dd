#pragma once

// The checks about the GPUs themselves: that they are visible and driven, that the module
// that lets a NIC reach their memory is loaded, and that BAR1 is large enough.

#include <cstdint>

#include "doctor/check_result.h"
#include "doctor/system_facts.h"

namespace kvx::doctor {

// "gpus": NVIDIA GPUs on PCI and the driver (version, each GPU bound to it).
CheckResult checkGpus(const SystemFacts& facts);

// "peermem": nvidia-peermem or nv_peer_mem loaded.
CheckResult checkPeermem(const SystemFacts& facts);

// "bar1": each GPU's BAR1 against the pool to be registered (failed when smaller) and against
// its memory (a warning when smaller: not all of it can be exposed to the NIC at once).
CheckResult checkBar1(const SystemFacts& facts);

// One GPU's BAR1 verdict, as checkBar1 judges it.
CheckState bar1State(const GpuInfo& gpu, std::uint64_t poolBytes);

inline constexpr const char* kPeermemFix =
    "modprobe nvidia-peermem (it ships with NVIDIA driver 470 and later; list it in "
    "/etc/modules-load.d/ to load it at boot)";
inline constexpr const char* kBar1Fix =
    "enable Resizable BAR / large BAR1 and Above 4G Decoding in the BIOS (on data-center GPUs "
    "the firmware sets BAR1; `nvidia-smi -q -d MEMORY` shows it)";

}  // namespace kvx::doctor
