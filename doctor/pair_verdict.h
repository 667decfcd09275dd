#pragma once

// The verdict for each GPU-NIC pair: "GPUDirect RDMA usable between GPU i and NIC j", or the
// reasons it is not, each with its fix. A reason blocks the pair (peermem missing, BAR1 smaller
// than the pool, IOMMU translating, different root complexes or sockets, ACS redirect, NIC port
// down, UCX without CUDA, memlock below the pool); a caveat leaves it usable but slower or
// unverified (only a root complex shared, BAR1 smaller than GPU memory, no gdr_copy).

#include <string>
#include <vector>

#include "doctor/check_result.h"
#include "doctor/pci_path.h"
#include "doctor/system_facts.h"

namespace kvx::doctor {

struct PairVerdict {
  int gpu = 0;             // GpuInfo::index
  std::string gpuAddress;  // "0000:18:00.0"
  std::string nic;         // "mlx5_0"
  std::string nicAddress;
  PciPathKind path = PciPathKind::kDifferentRootComplexes;
  std::string via;               // the deepest shared bridge, when any
  std::vector<Reason> blockers;  // empty when usable
  std::vector<Reason> caveats;

  bool usable() const { return blockers.empty(); }
  // "GPUDirect RDMA usable between GPU 0 and NIC mlx5_0" or "... not usable between ...".
  std::string sentence() const;
};

// One verdict per entry of facts.links, in the same order.
std::vector<PairVerdict> judgePairs(const SystemFacts& facts);

}  // namespace kvx::doctor
