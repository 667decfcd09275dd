#pragma once

// Whether the kernel module that lets an RDMA NIC pin and map GPU memory is loaded:
// nvidia-peermem (shipped with the NVIDIA driver since 470) or its predecessor nv_peer_mem
// (Mellanox's). Read from /proc/modules, and /sys/module/<name> for a built-in module.
// Without one of them, registering GPU memory with the NIC fails and UCX falls back to
// staging through host memory.

#include <string>

#include "doctor/system_root.h"

namespace kvx::doctor {

struct PeermemState {
  bool loaded = false;
  std::string module;  // "nvidia_peermem" or "nv_peer_mem" when loaded
  std::string source;  // where that was read: "/proc/modules", "/sys/module/nvidia_peermem"
  bool modulesReadable = false;  // false when /proc/modules could not be read
};

PeermemState probePeermem(const SystemRoot& root);

}  // namespace kvx::doctor
