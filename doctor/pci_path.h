#pragma once

// How a GPU and a NIC are connected in the PCIe tree, worked out from their sysfs paths: the
// deepest node both hang under decides. Peer-to-peer DMA (GPUDirect RDMA) is fastest behind a
// shared PCIe switch, works through a root complex at lower bandwidth, and is slow or refused
// between root complexes and across sockets (the NUMA nodes differ).

#include <string>
#include <string_view>
#include <vector>

#include "doctor/pci_device.h"

namespace kvx::doctor {

enum class PciPathKind {
  kSameSwitch,              // a PCI bridge above both (nvidia-smi topo: PIX or PXB)
  kSameRootComplex,         // only the host bridge above both (PHB)
  kDifferentRootComplexes,  // different host bridges on one NUMA node (NODE)
  kAcrossSockets,           // different host bridges on different NUMA nodes (SYS)
};

// "same-switch", "same-root-complex", "different-root-complexes", "across-sockets".
std::string_view toString(PciPathKind kind);

// "same PCIe switch", "same root complex", ...: for sentences.
std::string_view describe(PciPathKind kind);

struct PciPath {
  PciPathKind kind = PciPathKind::kDifferentRootComplexes;
  std::string via;  // the deepest shared node ("0000:16:00.0" or "pci0000:15"); "" when none
  // The PCI bridges a transfer between the two passes through below `via`: their ACS settings
  // decide whether the switch forwards peer-to-peer traffic or redirects it to the CPU.
  std::vector<PciNode> bridges;
};

PciPath classifyPciPath(const PciDevice& a, const PciDevice& b);

}  // namespace kvx::doctor
