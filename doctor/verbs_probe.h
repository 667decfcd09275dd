#pragma once

// Asks libibverbs which RDMA devices the running kernel offers: a cross-check of the sysfs
// scan (doctor/nic_probe.h), made only on the real root "/" (a fixture tree cannot stand in
// for the kernel). On a kernel without RDMA support ibv_get_device_list returns NULL with
// errno ENOSYS; that is a finding, not an error.

#include <string>
#include <vector>

#include "kvx/result.h"

namespace kvx::doctor {

// The names of the verbs devices. UNIMPLEMENTED when the kernel has no RDMA support (ENOSYS),
// TRANSPORT_ERROR for any other failure; both messages keep errno's text.
Result<std::vector<std::string>> listVerbsDevices();

}  // namespace kvx::doctor
