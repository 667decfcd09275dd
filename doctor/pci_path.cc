#include "doctor/pci_path.h"

namespace kvx::doctor {

std::string_view toString(PciPathKind kind) {
  switch (kind) {
    case PciPathKind::kSameSwitch: return "same-switch";
    case PciPathKind::kSameRootComplex: return "same-root-complex";
    case PciPathKind::kDifferentRootComplexes: return "different-root-complexes";
    case PciPathKind::kAcrossSockets: return "across-sockets";
  }
  return "different-root-complexes";
}

std::string_view describe(PciPathKind kind) {
  switch (kind) {
    case PciPathKind::kSameSwitch: return "same PCIe switch";
    case PciPathKind::kSameRootComplex: return "same root complex";
    case PciPathKind::kDifferentRootComplexes: return "different root complexes";
    case PciPathKind::kAcrossSockets: return "across sockets";
  }
  return "different root complexes";
}

PciPath classifyPciPath(const PciDevice& a, const PciDevice& b) {
  const auto& up = a.upstream;
  const auto& other = b.upstream;
  std::size_t shared = 0;
  while (shared < up.size() && shared < other.size() &&
         up[shared].sysfsPath == other[shared].sysfsPath) {
    ++shared;
  }

  PciPath path;
  for (const auto* chain : {&up, &other}) {
    for (std::size_t i = shared; i < chain->size(); ++i) {
      if (!(*chain)[i].hostBridge) path.bridges.push_back((*chain)[i]);
    }
  }
  if (shared > 0) {
    const PciNode& deepest = up[shared - 1];
    path.via = deepest.name;
    path.kind = deepest.hostBridge ? PciPathKind::kSameRootComplex : PciPathKind::kSameSwitch;
    return path;
  }
  const bool numaKnown = a.numaNode >= 0 && b.numaNode >= 0;
  path.kind = numaKnown && a.numaNode != b.numaNode ? PciPathKind::kAcrossSockets
                                                    : PciPathKind::kDifferentRootComplexes;
  return path;
}

}  // namespace kvx::doctor
