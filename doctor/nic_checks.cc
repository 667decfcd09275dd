#include "doctor/nic_checks.h"

#include <algorithm>

namespace kvx::doctor {
namespace {

std::string describePort(const RdmaPort& port) {
  std::string text = "port " + std::to_string(port.number) + " " +
                     (port.state.empty() ? "state unknown" : port.state);
  if (!port.rate.empty()) text += ", " + port.rate;
  if (!port.linkLayer.empty()) text += ", " + port.linkLayer;
  text += ", GID " + (port.gid0.empty() ? std::string("unknown") : port.gid0);
  return text;
}

std::string describeNic(const RdmaNic& nic) {
  std::string text = nic.name + " (";
  text += nic.pci ? nic.pci->address + ", NUMA node " + std::to_string(nic.pci->numaNode)
                  : std::string("no PCI device");
  text += ")";
  if (nic.ports.empty()) return text + ": no ports";
  for (std::size_t i = 0; i < nic.ports.size(); ++i) {
    text += (i == 0 ? ": " : "; ") + describePort(nic.ports[i]);
  }
  return text;
}

// libibverbs' view next to sysfs', on the real root only.
void addVerbsView(const SystemFacts& facts, CheckResult& result) {
  if (!facts.verbs) return;
  if (!facts.verbs->isOk()) {
    result.details.push_back("libibverbs: " + facts.verbs->status().message());
    return;
  }
  const auto& names = facts.verbs->value();
  std::string line = "libibverbs: " + std::to_string(names.size()) + " device(s)";
  for (const auto& name : names) {
    const bool inSysfs = std::any_of(facts.nics.nics.begin(), facts.nics.nics.end(),
                                     [&](const RdmaNic& nic) { return nic.name == name; });
    line += " " + name + (inSysfs ? "" : " (not in /sys/class/infiniband)");
  }
  result.details.push_back(line);
}

}  // namespace

CheckResult checkRdma(const SystemFacts& facts) {
  CheckResult result{"rdma", "RDMA devices", CheckState::kOk, "", "", {}};
  const auto& nics = facts.nics.nics;
  for (const auto& nic : nics) result.details.push_back(describeNic(nic));
  for (const auto& problem : facts.nics.problems) result.details.push_back(problem);
  addVerbsView(facts, result);

  if (nics.empty()) {
    result.found = "no RDMA device (/sys/class/infiniband is empty or missing)";
    result.state = facts.gpus.gpus.empty() ? CheckState::kNotApplicable : CheckState::kFailed;
    if (!facts.gpus.gpus.empty()) {
      result.fix =
          "GPUDirect RDMA needs an RDMA NIC (InfiniBand or RoCE) with its driver "
          "(mlx5_core, mlx5_ib) and ib_uverbs loaded";
    }
    return result;
  }
  std::size_t down = 0, noGid = 0;
  for (const auto& nic : nics) {
    down += nic.anyPortActive() ? 0 : 1;
    for (const auto& port : nic.ports) {
      noGid += port.active() && port.linkLayer == "Ethernet" && port.gidUnset() ? 1 : 0;
    }
  }
  result.found = std::to_string(nics.size()) + " RDMA device(s), " +
                 std::to_string(nics.size() - down) + " with an ACTIVE port";
  if (down == nics.size()) {
    result.state = CheckState::kFailed;
    result.fix = kPortDownFix;
  } else if (down > 0) {
    result.state = CheckState::kWarning;
    result.fix = kPortDownFix;
  } else if (noGid > 0) {
    result.state = CheckState::kWarning;
    result.found += "; " + std::to_string(noGid) + " RoCE port(s) without a GID";
    result.fix = "give the NIC's network interface an IP address (RoCE GIDs come from it)";
  }
  return result;
}

}  // namespace kvx::doctor
