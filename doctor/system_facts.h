#pragma once

// SystemFacts: everything the probes read about one machine, gathered once, so that the checks
// (doctor/*_checks.h) and the verdicts (doctor/pair_verdict.h, doctor/verdict.h) are pure
// functions of it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor/gpu_probe.h"
#include "doctor/iommu_probe.h"
#include "doctor/memlock_probe.h"
#include "doctor/nic_probe.h"
#include "doctor/pci_path.h"
#include "doctor/peermem_probe.h"
#include "doctor/system_root.h"
#include "doctor/ucx_probe.h"
#include "kvx/result.h"

namespace kvx::doctor {

// How one GPU reaches one RDMA NIC (only NICs with a PCI function take part).
struct GpuNicLink {
  std::size_t gpu = 0;  // index into SystemFacts::gpus.gpus
  std::size_t nic = 0;  // index into SystemFacts::nics.nics
  PciPath path;
  std::optional<PciPathKind> hwlocKind;  // what hwloc's XML says, when it was read
};

struct SystemFacts {
  std::string root;
  std::uint64_t poolBytes = 0;
  GpuScan gpus;
  NicScan nics;
  // libibverbs' device list: only on the real root ("/"), nullopt otherwise.
  std::optional<Result<std::vector<std::string>>> verbs;
  PeermemState peermem;
  IommuInfo iommu;
  MemlockLimit memlock;
  Result<UcxFacts> ucx = unimplemented("UCX was not probed");
  std::vector<GpuNicLink> links;  // every GPU with every NIC, GPU-major
  // The ACS control word of each bridge on a GPU-NIC path, by sysfs path; nullopt: unknown.
  std::map<std::string, std::optional<std::uint16_t>> acsControl;
  // Whether hwloc's XML was found, and what loading it said (OK, or why it was not used).
  bool hwlocXmlPresent = false;
  Status hwlocStatus;

  const GpuInfo& gpuOf(const GpuNicLink& link) const { return gpus.gpus[link.gpu]; }
  const RdmaNic& nicOf(const GpuNicLink& link) const { return nics.nics[link.nic]; }
};

// Runs every probe against `root`. Never fails: what cannot be read is recorded as unknown.
SystemFacts gatherFacts(const SystemRoot& root, std::uint64_t poolBytes, const UcxProbe& ucx);

}  // namespace kvx::doctor
