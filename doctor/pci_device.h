#pragma once

// PciDevice: what sysfs says about one PCI function, read through a SystemRoot:
//   /sys/bus/pci/devices/<address>            symlink to its place in the PCIe tree
//   .../{vendor,device,class,numa_node}       hex ids and the NUMA node (-1: not known)
//   .../resource                              one "start end flags" line per BAR
//   .../iommu_group -> .../iommu_groups/N     whose `type` is identity, DMA or DMA-FQ
// and, for bridges, the ACS control word from `acs_ctrl`: a file only fixtures have (sysfs does
// not publish ACS; on a real machine it reads as unknown).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/system_root.h"
#include "kvx/result.h"

namespace kvx::doctor {

// One node on the way from the CPU down to a device: a host bridge ("pci0000:15", the root
// complex) or a PCI bridge ("0000:15:01.0": a root port or a PCIe switch port).
struct PciNode {
  std::string name;
  std::string sysfsPath;  // "/sys/devices/pci0000:15/0000:15:01.0"
  bool hostBridge = false;
};

struct PciDevice {
  std::string address;  // "0000:18:00.0"
  std::uint32_t vendor = 0;
  std::uint32_t deviceId = 0;
  std::uint32_t classCode = 0;                // 24 bits: 0x030200 is a 3D controller
  int numaNode = -1;                          // -1 when the platform does not say
  std::string sysfsPath;                      // the resolved device directory
  std::vector<PciNode> upstream;              // from the host bridge down to the device's parent
  std::vector<std::uint64_t> barBytes;        // size of each BAR by index; 0 when unused
  std::optional<std::string> iommuGroupType;  // "identity", "DMA", "DMA-FQ"

  // The host bridge's name, or "" when the path has none (a virtual device).
  std::string rootComplex() const;
};

// Reads /sys/bus/pci/devices/<address>. NOT_FOUND when it is missing; a missing vendor or
// class file is an error too (those identify the device), the other files are optional.
Result<PciDevice> readPciDevice(const SystemRoot& root, std::string_view address);

// Every name under /sys/bus/pci/devices, sorted.
std::vector<std::string> listPciAddresses(const SystemRoot& root);

// The ACS control word of the bridge at `node`, from its `acs_ctrl` file (hex); nullopt when
// the file is missing or unreadable.
std::optional<std::uint16_t> readAcsControl(const SystemRoot& root, const PciNode& node);

// Parses a sysfs hex value such as "0x10de" or "10de". nullopt when it is not hex.
std::optional<std::uint64_t> parseHex(std::string_view text);

}  // namespace kvx::doctor
