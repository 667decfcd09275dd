#pragma once

// Finds the RDMA NICs through a SystemRoot, from sysfs alone (so fixtures work):
//   /sys/class/infiniband/<dev>                       one entry per RDMA device (mlx5_0, ...)
//   /sys/class/infiniband/<dev>/device                symlink to its PCI function
//   /sys/class/infiniband/<dev>/ports/<n>/state       "4: ACTIVE"
//   .../ports/<n>/rate                                "400 Gb/sec (4X NDR)"
//   .../ports/<n>/link_layer                          "InfiniBand" or "Ethernet" (RoCE)
//   .../ports/<n>/gids/0                              the port's first GID

#include <optional>
#include <string>
#include <vector>

#include "doctor/pci_device.h"
#include "doctor/system_root.h"

namespace kvx::doctor {

struct RdmaPort {
  unsigned number = 0;
  std::string state;      // "ACTIVE", "DOWN", ...; "" when unreadable
  std::string rate;       // "400 Gb/sec (4X NDR)"
  std::string linkLayer;  // "InfiniBand", "Ethernet"
  std::string gid0;       // "fe80:0000:0000:0000:..."; "" when unreadable

  bool active() const { return state == "ACTIVE"; }
  // True for a GID of all zeros: on RoCE, the port has no address to be reached at.
  bool gidUnset() const;
};

struct RdmaNic {
  std::string name;              // "mlx5_0"
  std::optional<PciDevice> pci;  // nullopt for a device without a PCI function (soft RoCE)
  std::vector<RdmaPort> ports;

  bool anyPortActive() const;
};

struct NicScan {
  std::vector<RdmaNic> nics;
  std::vector<std::string> problems;  // entries that could not be read, and why
};

NicScan probeNics(const SystemRoot& root);

}  // namespace kvx::doctor
