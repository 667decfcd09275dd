#include "doctor/pair_verdict.h"

#include "doctor/byte_count.h"
#include "doctor/gpu_checks.h"
#include "doctor/host_checks.h"
#include "doctor/nic_checks.h"
#include "doctor/topology_checks.h"

namespace kvx::doctor {
namespace {

void judgeGpu(const SystemFacts& facts, const GpuInfo& gpu, PairVerdict& verdict) {
  const std::string name = "GPU " + std::to_string(gpu.index);
  if (!facts.gpus.driverVersion) {
    verdict.blockers.push_back({"gpus", "the NVIDIA driver is not loaded",
                                "install and load the NVIDIA driver (modprobe nvidia)"});
  }
  if (!facts.peermem.loaded) {
    auto& list = facts.peermem.modulesReadable ? verdict.blockers : verdict.caveats;
    list.push_back({"peermem", "nvidia-peermem is not loaded", kPeermemFix});
  }
  const std::string bar1 = formatBytes(gpu.bar1Bytes);
  switch (bar1State(gpu, facts.poolBytes)) {
    case CheckState::kFailed:
      verdict.blockers.push_back({"bar1",
                                  name + "'s BAR1 (" + bar1 + ") is smaller than the " +
                                      formatBytes(facts.poolBytes) + " pool",
                                  kBar1Fix});
      break;
    case CheckState::kWarning:
      verdict.caveats.push_back({"bar1",
                                 name + "'s BAR1 (" + bar1 + ") is smaller than its memory (" +
                                     formatBytes(gpu.memoryBytes.value_or(0)) + ")",
                                 kBar1Fix});
      break;
    default: break;
  }
}

void judgePath(const SystemFacts& facts, const GpuNicLink& link, PairVerdict& verdict) {
  const GpuInfo& gpu = facts.gpuOf(link);
  const RdmaNic& nic = facts.nicOf(link);
  const std::string pair = "GPU " + std::to_string(gpu.index) + " and " + nic.name;
  std::string fix = "expect lower bandwidth, or pick a NIC behind the GPU's PCIe switch";
  if (const auto closest = closestNic(facts, link.gpu); closest && *closest != link.nic) {
    fix = "pick " + facts.nics.nics[*closest].name + " (the NIC closest to GPU " +
          std::to_string(gpu.index) + ") or expect lower bandwidth";
  }
  switch (link.path.kind) {
    case PciPathKind::kSameSwitch: break;
    case PciPathKind::kSameRootComplex:
      verdict.caveats.push_back(
          {"topology", pair + " share only the root complex " + link.path.via, fix});
      break;
    case PciPathKind::kDifferentRootComplexes:
      verdict.blockers.push_back({"topology",
                                  pair + " are on different root complexes (" +
                                      gpu.pci.rootComplex() + ", " + nic.pci->rootComplex() + ")",
                                  fix});
      break;
    case PciPathKind::kAcrossSockets:
      verdict.blockers.push_back({"topology",
                                  pair + " are across sockets (NUMA node " +
                                      std::to_string(gpu.pci.numaNode) + " and " +
                                      std::to_string(nic.pci->numaNode) + ")",
                                  fix});
      break;
  }
  if (const auto bridges = redirectingBridges(facts, link); !bridges.empty()) {
    verdict.blockers.push_back(
        {"acs", "ACS redirects peer-to-peer traffic on " + bridges, kAcsFix});
  }
  std::string translated, unknown;
  for (const PciDevice* device : {&gpu.pci, &*nic.pci}) {
    const IommuMode mode = deviceIommuMode(*device, facts.iommu);
    std::string& list = mode == IommuMode::kTranslated ? translated : unknown;
    if (mode == IommuMode::kTranslated || mode == IommuMode::kUnknown) {
      list += (list.empty() ? "" : " and ") + device->address;
    }
  }
  if (!translated.empty()) {
    verdict.blockers.push_back({"iommu", "the IOMMU translates DMA for " + translated, kIommuFix});
  }
  if (!unknown.empty()) {
    verdict.caveats.push_back(
        {"iommu", "the IOMMU mode for " + unknown + " is unknown", kIommuFix});
  }
  if (!nic.anyPortActive()) {
    verdict.blockers.push_back({"rdma", nic.name + " has no ACTIVE port", kPortDownFix});
  }
}

void judgeHost(const SystemFacts& facts, PairVerdict& verdict) {
  if (!facts.ucx.isOk()) {
    verdict.caveats.push_back({"ucx", "UCX could not be queried", "see the UCX check"});
  } else if (!facts.ucx->supportsCuda()) {
    verdict.blockers.push_back(
        {"ucx", "UCX " + facts.ucx->version + " cannot move CUDA memory", kUcxCudaFix});
  } else if (!facts.ucx->putGetMovesCuda()) {
    verdict.blockers.push_back(
        {"ucx", "UCX " + facts.ucx->version + " cannot put or get CUDA memory (before 1.16)",
         kUcxReleaseFix});
  } else if (!facts.ucx->hasGdrCopy()) {
    verdict.caveats.push_back(
        {"ucx", "UCX has no gdr_copy transport", "install gdrcopy and build UCX --with-gdrcopy"});
  }
  if (!facts.memlock.allows(facts.poolBytes)) {
    verdict.blockers.push_back({"memlock",
                                "the locked-memory limit (" + formatBytes(facts.memlock.bytes) +
                                    ") is below the " + formatBytes(facts.poolBytes) + " pool",
                                kMemlockFix});
  }
}

}  // namespace

std::string PairVerdict::sentence() const {
  return std::string("GPUDirect RDMA ") + (usable() ? "usable" : "not usable") + " between GPU " +
         std::to_string(gpu) + " and NIC " + nic;
}

std::vector<PairVerdict> judgePairs(const SystemFacts& facts) {
  std::vector<PairVerdict> verdicts;
  for (const auto& link : facts.links) {
    const GpuInfo& gpu = facts.gpuOf(link);
    const RdmaNic& nic = facts.nicOf(link);
    PairVerdict verdict;
    verdict.gpu = gpu.index;
    verdict.gpuAddress = gpu.pci.address;
    verdict.nic = nic.name;
    verdict.nicAddress = nic.pci->address;
    verdict.path = link.path.kind;
    verdict.via = link.path.via;
    judgeGpu(facts, gpu, verdict);
    judgePath(facts, link, verdict);
    judgeHost(facts, verdict);
    verdicts.push_back(std::move(verdict));
  }
  return verdicts;
}

}  // namespace kvx::doctor
