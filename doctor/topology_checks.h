#pragma once

// The checks about where the GPUs and NICs sit in the PCIe tree: how each GPU reaches each
// NIC (doctor/pci_path.h) and their NUMA nodes, ACS on the bridges between them, and the hwloc
// cross-check when an hwloc XML export is present.

#include <cstdint>
#include <optional>
#include <string>

#include "doctor/check_result.h"
#include "doctor/system_facts.h"

namespace kvx::doctor {

// "topology": ok when every GPU has a NIC behind its own PCIe switch, a warning when the best
// a GPU has is its root complex, failed when a GPU reaches every NIC only across root complexes
// or sockets.
CheckResult checkTopology(const SystemFacts& facts);

// "acs": failed when a bridge between a GPU and a NIC redirects peer-to-peer requests or
// completions to the root complex; unknown when no ACS control word could be read (sysfs does
// not publish it).
CheckResult checkAcs(const SystemFacts& facts);

// "hwloc": ok when the hwloc XML's topology agrees with sysfs for every pair; a warning on
// disagreement or when it does not load; n/a without the XML.
CheckResult checkHwloc(const SystemFacts& facts);

// The ACS control bits that send peer-to-peer traffic up to the root complex:
// P2P Request Redirect (bit 2) and P2P Completion Redirect (bit 3).
inline constexpr std::uint16_t kAcsRedirectBits = 0x000c;

// The closest NIC to GPU `gpu` (index into facts.gpus.gpus), ties broken by NIC order; nullopt
// when there is no link.
std::optional<std::size_t> closestNic(const SystemFacts& facts, std::size_t gpu);

// The bridges on `link`'s path whose ACS redirects peer-to-peer traffic: "0000:17:00.0 (ACS
// control 0x001d)", comma separated; "" when none does or none is known.
std::string redirectingBridges(const SystemFacts& facts, const GpuNicLink& link);

inline constexpr const char* kAcsFix =
    "disable ACS P2P redirect on the PCIe switch ports between GPU and NIC (a BIOS option, or "
    "`setpci -s <bridge> ECAP_ACS+0x6.w=0000` at boot); with an IOMMU in translated mode keep "
    "ACS and use iommu=pt instead";

}  // namespace kvx::doctor
