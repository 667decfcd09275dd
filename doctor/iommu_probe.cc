#include "doctor/iommu_probe.h"

#include <algorithm>
#include <sstream>

namespace kvx::doctor {
namespace {

IommuMode modeOfGroupType(const std::string& type) {
  if (type == "identity") return IommuMode::kPassthrough;
  if (type.rfind("DMA", 0) == 0) return IommuMode::kTranslated;  // DMA, DMA-FQ
  if (type == "blocked") return IommuMode::kTranslated;
  return IommuMode::kUnknown;
}

bool hasFlag(const std::vector<std::string>& flags, std::string_view flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

// The mode the command line asks for, or kUnknown when it does not say.
IommuMode modeOfCmdline(const std::vector<std::string>& flags) {
  if (hasFlag(flags, "iommu=off") || hasFlag(flags, "intel_iommu=off") ||
      hasFlag(flags, "amd_iommu=off")) {
    return IommuMode::kOff;
  }
  if (hasFlag(flags, "iommu=pt") || hasFlag(flags, "iommu.passthrough=1") ||
      hasFlag(flags, "amd_iommu=pt")) {
    return IommuMode::kPassthrough;
  }
  if (hasFlag(flags, "intel_iommu=on") || hasFlag(flags, "amd_iommu=on") ||
      hasFlag(flags, "iommu.passthrough=0") || hasFlag(flags, "iommu=nopt")) {
    return IommuMode::kTranslated;
  }
  return IommuMode::kUnknown;
}

}  // namespace

std::string_view toString(IommuMode mode) {
  switch (mode) {
    case IommuMode::kOff: return "off";
    case IommuMode::kPassthrough: return "passthrough";
    case IommuMode::kTranslated: return "translated";
    case IommuMode::kUnknown: return "unknown";
  }
  return "unknown";
}

IommuInfo probeIommu(const SystemRoot& root, const std::vector<const PciDevice*>& devices) {
  IommuInfo info;
  info.units = root.list("/sys/class/iommu");
  std::istringstream words(root.readLine("/proc/cmdline").valueOr(std::string()));
  std::string word;
  while (words >> word) {
    if (word.rfind("iommu", 0) == 0 || word.rfind("intel_iommu", 0) == 0 ||
        word.rfind("amd_iommu", 0) == 0) {
      info.cmdlineFlags.push_back(word);
    }
  }

  const PciDevice* passthrough = nullptr;
  for (const PciDevice* device : devices) {
    if (!device->iommuGroupType) continue;
    const IommuMode mode = modeOfGroupType(*device->iommuGroupType);
    if (mode == IommuMode::kTranslated) {
      info.mode = mode;
      info.evidence = "the IOMMU group of " + device->address + " has type '" +
                      *device->iommuGroupType + "' (translated)";
      return info;
    }
    if (mode == IommuMode::kPassthrough) passthrough = device;
  }
  if (passthrough != nullptr) {
    info.mode = IommuMode::kPassthrough;
    info.evidence = "the IOMMU groups of the GPUs and NICs have type 'identity' (e.g. " +
                    passthrough->address + ")";
    return info;
  }
  if (info.units.empty() && root.list("/sys/kernel/iommu_groups").empty()) {
    info.mode = IommuMode::kOff;
    info.evidence = "no IOMMU under /sys/class/iommu and no IOMMU groups";
    return info;
  }
  info.mode = modeOfCmdline(info.cmdlineFlags);
  std::string flags;
  for (const auto& flag : info.cmdlineFlags) flags += (flags.empty() ? "" : " ") + flag;
  info.evidence = info.mode == IommuMode::kUnknown
                      ? "an IOMMU is present but neither its groups nor /proc/cmdline say its mode"
                      : "/proc/cmdline has " + flags;
  return info;
}

IommuMode deviceIommuMode(const PciDevice& device, const IommuInfo& system) {
  if (device.iommuGroupType) {
    const IommuMode mode = modeOfGroupType(*device.iommuGroupType);
    if (mode != IommuMode::kUnknown) return mode;
  }
  return system.mode;
}

}  // namespace kvx::doctor
