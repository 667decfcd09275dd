#include "doctor/topology_checks.h"

#include <cstdio>

namespace kvx::doctor {
namespace {

std::string hex16(std::uint16_t value) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "0x%04x", value);
  return buffer;
}

std::string pairName(const SystemFacts& facts, const GpuNicLink& link) {
  return "GPU " + std::to_string(facts.gpuOf(link).index) + " - " + facts.nicOf(link).name;
}

const GpuNicLink* closestLink(const SystemFacts& facts, std::size_t gpu) {
  const GpuNicLink* best = nullptr;
  for (const auto& link : facts.links) {
    if (link.gpu != gpu) continue;
    if (best == nullptr || static_cast<int>(link.path.kind) < static_cast<int>(best->path.kind)) {
      best = &link;
    }
  }
  return best;
}

}  // namespace

std::optional<std::size_t> closestNic(const SystemFacts& facts, std::size_t gpu) {
  const GpuNicLink* best = closestLink(facts, gpu);
  return best ? std::optional(best->nic) : std::nullopt;
}

std::string redirectingBridges(const SystemFacts& facts, const GpuNicLink& link) {
  std::string text;
  for (const PciNode& bridge : link.path.bridges) {
    const auto found = facts.acsControl.find(bridge.sysfsPath);
    if (found == facts.acsControl.end() || !found->second) continue;
    if ((*found->second & kAcsRedirectBits) == 0) continue;
    text +=
        (text.empty() ? "" : ", ") + bridge.name + " (ACS control " + hex16(*found->second) + ")";
  }
  return text;
}

CheckResult checkTopology(const SystemFacts& facts) {
  CheckResult result{"topology", "PCIe topology", CheckState::kNotApplicable, "", "", {}};
  if (facts.links.empty()) {
    result.found = "no GPU-NIC pair to place";
    return result;
  }
  std::size_t counts[4] = {0, 0, 0, 0};
  for (const auto& link : facts.links) ++counts[static_cast<int>(link.path.kind)];
  for (std::size_t g = 0; g < facts.gpus.gpus.size(); ++g) {
    const GpuNicLink* link = closestLink(facts, g);
    if (link == nullptr) continue;
    const GpuInfo& gpu = facts.gpuOf(*link);
    const RdmaNic& nic = facts.nicOf(*link);
    result.details.push_back("GPU " + std::to_string(gpu.index) + " (" + gpu.pci.address +
                             ", NUMA node " + std::to_string(gpu.pci.numaNode) + "): closest NIC " +
                             nic.name + " (" + nic.pci->address + ", NUMA node " +
                             std::to_string(nic.pci->numaNode) + "), " +
                             std::string(describe(link->path.kind)) +
                             (link->path.via.empty() ? "" : " (via " + link->path.via + ")"));
    const CheckState state = link->path.kind == PciPathKind::kSameSwitch ? CheckState::kOk
                             : link->path.kind == PciPathKind::kSameRootComplex
                                 ? CheckState::kWarning
                                 : CheckState::kFailed;
    result.state = worse(result.state, state);
  }
  result.found = std::to_string(facts.links.size()) +
                 " GPU-NIC pairs: " + std::to_string(counts[0]) + " behind a shared PCIe switch, " +
                 std::to_string(counts[1]) + " through one root complex, " +
                 std::to_string(counts[2]) + " across root complexes, " +
                 std::to_string(counts[3]) + " across sockets";
  if (result.state == CheckState::kFailed) {
    result.fix =
        "some GPUs have no NIC on their PCIe switch or root complex: move a NIC into a "
        "slot under the GPU's switch, or expect lower bandwidth for those GPUs";
  } else if (result.state == CheckState::kWarning) {
    result.fix =
        "a GPU whose closest NIC is through the root complex gets less bandwidth than "
        "one sharing a PCIe switch with its NIC";
  }
  return result;
}

CheckResult checkAcs(const SystemFacts& facts) {
  CheckResult result{"acs", "ACS on the GPU-NIC paths", CheckState::kNotApplicable, "", "", {}};
  if (facts.acsControl.empty()) {
    result.found = "no PCI bridge between a GPU and a NIC";
    return result;
  }
  std::size_t known = 0;
  for (const auto& [path, control] : facts.acsControl) {
    if (!control) continue;
    ++known;
    if ((*control & kAcsRedirectBits) != 0) {
      result.details.push_back(path + ": ACS control " + hex16(*control) + ", P2P redirect on");
    }
  }
  const std::string bridges = std::to_string(facts.acsControl.size()) + " bridge(s)";
  if (known == 0) {
    result.state = CheckState::kUnknown;
    result.found = "unknown for the " + bridges + " on the paths: sysfs does not publish ACS";
    result.fix =
        "check with `sudo lspci -vvv | grep -i ACSCtl` (ReqRedir+ or CmpltRedir+ on a "
        "switch port between GPU and NIC blocks direct peer-to-peer)";
  } else if (!result.details.empty()) {
    result.state = CheckState::kFailed;
    result.found = std::to_string(result.details.size()) + " of " + bridges +
                   " redirect peer-to-peer traffic to the root complex";
    result.fix = kAcsFix;
  } else {
    // Switch upstream ports have no ACS capability; the known words are the ones that count.
    result.state = CheckState::kOk;
    result.found = "P2P redirect off on the " + std::to_string(known) + " of " + bridges +
                   " on the paths whose ACS control is known";
  }
  return result;
}

CheckResult checkHwloc(const SystemFacts& facts) {
  CheckResult result{"hwloc", "hwloc cross-check", CheckState::kNotApplicable, "", "", {}};
  if (!facts.hwlocXmlPresent) {
    result.found = "no kvx-doctor-hwloc.xml under the root: topology from sysfs only";
    return result;
  }
  if (!facts.hwlocStatus.isOk()) {
    result.state = facts.hwlocStatus.code() == StatusCode::kUnimplemented ? CheckState::kUnknown
                                                                          : CheckState::kWarning;
    result.found = facts.hwlocStatus.message();
    return result;
  }
  std::size_t agree = 0;
  for (const auto& link : facts.links) {
    if (!link.hwlocKind) {
      result.details.push_back(pairName(facts, link) + ": not in the hwloc XML");
    } else if (*link.hwlocKind == link.path.kind) {
      ++agree;
    } else {
      result.details.push_back(pairName(facts, link) + ": sysfs says " +
                               std::string(describe(link.path.kind)) + ", hwloc says " +
                               std::string(describe(*link.hwlocKind)));
    }
  }
  result.found = "hwloc agrees with sysfs on " + std::to_string(agree) + " of " +
                 std::to_string(facts.links.size()) + " GPU-NIC pairs";
  result.state = agree == facts.links.size() ? CheckState::kOk : CheckState::kWarning;
  if (result.state == CheckState::kWarning) {
    result.fix =
        "the XML may come from another node or an older layout: export it again on this "
        "node with `lstopo --of xml`";
  }
  return result;
}

}  // namespace kvx::doctor
