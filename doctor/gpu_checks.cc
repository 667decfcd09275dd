#include "doctor/gpu_checks.h"

#include "doctor/byte_count.h"

namespace kvx::doctor {
namespace {

std::string describeGpu(const GpuInfo& gpu) {
  std::string text = "GPU " + std::to_string(gpu.index) + " (" + gpu.pci.address + ")";
  if (!gpu.model.empty()) text += " " + gpu.model;
  if (gpu.memoryBytes) text += ", " + formatBytes(*gpu.memoryBytes);
  text += ", NUMA node " + std::to_string(gpu.pci.numaNode);
  if (!gpu.driverBound) text += ", not bound to the NVIDIA driver";
  return text;
}

}  // namespace

CheckResult checkGpus(const SystemFacts& facts) {
  CheckResult result{"gpus", "GPUs and driver", CheckState::kOk, "", "", {}};
  const auto& scan = facts.gpus;
  const std::string driver =
      scan.driverVersion ? "NVIDIA driver " + *scan.driverVersion
                         : "the NVIDIA driver is not loaded (no /proc/driver/nvidia/version)";
  for (const auto& gpu : scan.gpus) result.details.push_back(describeGpu(gpu));
  for (const auto& problem : scan.problems) result.details.push_back(problem);

  if (scan.gpus.empty()) {
    result.state = scan.problems.empty() ? CheckState::kNotApplicable : CheckState::kWarning;
    result.found =
        "no GPU visible (no PCI device with vendor 0x10de and class 0x03xxxx); " + driver;
    if (!scan.problems.empty()) result.fix = "check the sysfs entries named above";
    return result;
  }
  result.found = std::to_string(scan.gpus.size()) + " NVIDIA GPU(s); " + driver;
  if (!scan.driverVersion) {
    result.state = CheckState::kFailed;
    result.fix =
        "install and load the NVIDIA driver (modprobe nvidia; see dmesg for why it failed)";
    return result;
  }
  std::size_t unbound = 0;
  for (const auto& gpu : scan.gpus) unbound += gpu.driverBound ? 0 : 1;
  if (unbound > 0 || !scan.problems.empty()) {
    result.state = CheckState::kWarning;
    result.found += "; " + std::to_string(unbound) + " GPU(s) not bound to the driver";
    result.fix =
        "check `nvidia-smi` and dmesg for GPUs the driver did not take (excluded, fallen "
        "off the bus, bound to vfio-pci)";
  }
  return result;
}

CheckResult checkPeermem(const SystemFacts& facts) {
  CheckResult result{"peermem", "nvidia-peermem", CheckState::kOk, "", "", {}};
  const auto& peermem = facts.peermem;
  if (peermem.loaded) {
    result.found = peermem.module + " is loaded (" + peermem.source + ")";
    if (facts.gpus.gpus.empty()) result.state = CheckState::kNotApplicable;
    return result;
  }
  result.found = "neither nvidia_peermem nor nv_peer_mem is loaded (/proc/modules, /sys/module)";
  if (facts.gpus.gpus.empty()) {
    result.state = CheckState::kNotApplicable;
    result.found += "; not needed without a GPU";
  } else if (!peermem.modulesReadable) {
    result.state = CheckState::kUnknown;
    result.found = "/proc/modules is not readable and /sys/module has no nvidia_peermem";
    result.fix = kPeermemFix;
  } else {
    result.state = CheckState::kFailed;
    result.fix = kPeermemFix;
  }
  return result;
}

CheckState bar1State(const GpuInfo& gpu, std::uint64_t poolBytes) {
  if (gpu.bar1Bytes == 0) return CheckState::kUnknown;
  if (gpu.bar1Bytes < poolBytes) return CheckState::kFailed;
  if (gpu.memoryBytes && gpu.bar1Bytes < *gpu.memoryBytes) return CheckState::kWarning;
  return CheckState::kOk;
}

CheckResult checkBar1(const SystemFacts& facts) {
  CheckResult result{"bar1", "BAR1 size", CheckState::kNotApplicable, "", "", {}};
  if (facts.gpus.gpus.empty()) {
    result.found = "no GPU";
    return result;
  }
  std::size_t failed = 0, small = 0, unknown = 0;
  for (const auto& gpu : facts.gpus.gpus) {
    const CheckState state = bar1State(gpu, facts.poolBytes);
    result.state = worse(result.state, state);
    failed += state == CheckState::kFailed ? 1 : 0;
    small += state == CheckState::kWarning ? 1 : 0;
    unknown += state == CheckState::kUnknown ? 1 : 0;
    std::string line = "GPU " + std::to_string(gpu.index) + " (" + gpu.pci.address + "): BAR1 " +
                       (gpu.bar1Bytes ? formatBytes(gpu.bar1Bytes) : "unknown (no resource file)");
    line += ", memory " + (gpu.memoryBytes ? formatBytes(*gpu.memoryBytes) : "unknown");
    result.details.push_back(line + ": " + std::string(toString(state)));
  }
  const std::string pool = formatBytes(facts.poolBytes);
  if (failed > 0) {
    result.found = std::to_string(failed) + " GPU(s) with a BAR1 smaller than the " + pool +
                   " pool: the NIC can reach only BAR1's worth of GPU memory";
    result.fix = kBar1Fix;
  } else if (small > 0) {
    result.found = std::to_string(small) + " GPU(s) with a BAR1 smaller than their memory: the " +
                   pool + " pool fits, but not all GPU memory can be registered at once";
    result.fix = "keep registered GPU memory below BAR1, or " + std::string(kBar1Fix);
  } else if (unknown > 0) {
    result.found = "BAR1 size not readable for " + std::to_string(unknown) + " GPU(s)";
  } else {
    bool memoryKnown = true;
    for (const auto& gpu : facts.gpus.gpus) memoryKnown = memoryKnown && gpu.memoryBytes;
    result.found = "every GPU's BAR1 holds the " + pool + " pool" +
                   (memoryKnown ? " and the GPU's whole memory" : " (GPU memory size not known)");
  }
  return result;
}

}  // namespace kvx::doctor
