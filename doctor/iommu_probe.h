#pragma once

// The IOMMU's mode. In translated mode every DMA address a device uses is remapped; peer-to-
// peer DMA between a NIC and a GPU then needs mappings the RDMA stack does not set up, so
// GPUDirect RDMA fails or is redirected through the CPU. Passthrough (iommu=pt) or no IOMMU
// is what GPUDirect RDMA wants. Read from, best evidence first:
//   the `type` of the devices' IOMMU groups (/sys/kernel/iommu_groups/N/type: identity means
//   passthrough, DMA or DMA-FQ means translated), then whether any IOMMU exists
//   (/sys/class/iommu, /sys/kernel/iommu_groups), then the kernel command line
//   (/proc/cmdline: iommu=pt, iommu.passthrough=1, intel_iommu=on, amd_iommu=on, iommu=off).

#include <string>
#include <string_view>
#include <vector>

#include "doctor/pci_device.h"
#include "doctor/system_root.h"

namespace kvx::doctor {

enum class IommuMode { kOff, kPassthrough, kTranslated, kUnknown };

// "off", "passthrough", "translated", "unknown".
std::string_view toString(IommuMode mode);

struct IommuInfo {
  IommuMode mode = IommuMode::kUnknown;
  std::string evidence;                   // why: the file and value that decided
  std::vector<std::string> units;         // /sys/class/iommu entries: dmar0, ivhd0, ...
  std::vector<std::string> cmdlineFlags;  // the IOMMU parameters on the kernel command line
};

// `devices`: the GPUs and NICs whose groups decide the mode.
IommuInfo probeIommu(const SystemRoot& root, const std::vector<const PciDevice*>& devices);

// The mode for one device: its group's type when known, else the system's mode.
IommuMode deviceIommuMode(const PciDevice& device, const IommuInfo& system);

}  // namespace kvx::doctor
