#include "doctor/system_facts.h"

#include "doctor/hwloc_paths.h"
#include "doctor/verbs_probe.h"

namespace kvx::doctor {
namespace {

void linkGpusToNics(const SystemRoot& root, SystemFacts& facts) {
  for (std::size_t g = 0; g < facts.gpus.gpus.size(); ++g) {
    for (std::size_t n = 0; n < facts.nics.nics.size(); ++n) {
      const auto& nic = facts.nics.nics[n];
      if (!nic.pci) continue;
      GpuNicLink link{g, n, classifyPciPath(facts.gpus.gpus[g].pci, *nic.pci), std::nullopt};
      for (const PciNode& bridge : link.path.bridges) {
        if (facts.acsControl.count(bridge.sysfsPath) == 0) {
          facts.acsControl[bridge.sysfsPath] = readAcsControl(root, bridge);
        }
      }
      facts.links.push_back(std::move(link));
    }
  }
}

void crossCheckWithHwloc(const SystemRoot& root, SystemFacts& facts) {
  facts.hwlocXmlPresent = root.exists(kHwlocFixtureFile);
  if (!facts.hwlocXmlPresent) return;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& link : facts.links) {
    pairs.emplace_back(facts.gpuOf(link).pci.address, facts.nicOf(link).pci->address);
  }
  auto kinds = classifyWithHwloc(root.hostPath(kHwlocFixtureFile), pairs);
  facts.hwlocStatus = kinds.status();
  if (!kinds.isOk()) return;
  for (std::size_t i = 0; i < facts.links.size(); ++i) facts.links[i].hwlocKind = (*kinds)[i];
}

}  // namespace

SystemFacts gatherFacts(const SystemRoot& root, std::uint64_t poolBytes, const UcxProbe& ucx) {
  SystemFacts facts;
  facts.root = root.path().string();
  facts.poolBytes = poolBytes;
  facts.gpus = probeGpus(root);
  facts.nics = probeNics(root);
  if (root.isRealRoot()) facts.verbs = listVerbsDevices();
  facts.peermem = probePeermem(root);
  std::vector<const PciDevice*> devices;
  for (const auto& gpu : facts.gpus.gpus) devices.push_back(&gpu.pci);
  for (const auto& nic : facts.nics.nics) {
    if (nic.pci) devices.push_back(&*nic.pci);
  }
  facts.iommu = probeIommu(root, devices);
  facts.memlock = probeMemlock(root);
  facts.ucx = ucx.probe();
  linkGpusToNics(root, facts);
  crossCheckWithHwloc(root, facts);
  return facts;
}

}  // namespace kvx::doctor
