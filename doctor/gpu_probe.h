#pragma once

// Finds the NVIDIA GPUs and their driver through a SystemRoot:
//   GPUs:    PCI devices with vendor 0x10de and class 0x03xxxx (display controllers)
//   driver:  /proc/driver/nvidia/version ("NVRM version: ... Kernel Module  535.129.03 ...")
//   per GPU: /proc/driver/nvidia/gpus/<address>/information (Model, Device Minor), and the
//            GPU memory size from /proc/driver/nvidia/gpus/<address>/kvx-memory-bytes: the
//            driver does not publish it in procfs, so only fixtures have that file (on a real
//            machine the size is unknown and BAR1 is compared with the pool size alone)
//   BAR1:    the size of BAR 1 in the device's sysfs `resource` file (the window through which
//            the NIC reaches GPU memory)

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/pci_device.h"
#include "doctor/system_root.h"

namespace kvx::doctor {

inline constexpr std::uint32_t kNvidiaVendorId = 0x10de;

struct GpuInfo {
  int index = 0;  // position in PCI address order, as CUDA_DEVICE_ORDER=PCI_BUS_ID counts
  PciDevice pci;
  bool driverBound = false;  // the driver lists it under /proc/driver/nvidia/gpus
  std::string model;         // "NVIDIA H100 80GB HBM3"; empty without the driver
  std::optional<std::uint64_t> memoryBytes;
  std::uint64_t bar1Bytes = 0;  // 0 when the resource file is missing
};

struct GpuScan {
  std::optional<std::string> driverVersion;  // "535.129.03"; nullopt when not loaded
  std::vector<GpuInfo> gpus;
  std::vector<std::string> problems;  // GPUs whose sysfs entry could not be read, and why
};

GpuScan probeGpus(const SystemRoot& root);

}  // namespace kvx::doctor
