#include "doctor/verbs_probe.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace kvx::doctor {

Result<std::vector<std::string>> listVerbsDevices() {
  errno = 0;
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) {
    const int error = errno;
    std::string message = "ibv_get_device_list failed: " + std::string(std::strerror(error)) +
                          " (errno " + std::to_string(error) + ")";
    if (error == ENOSYS) {
      return unimplemented(message + ": this kernel has no RDMA support (no ib_uverbs)");
    }
    return transportError(message + ": check that ib_uverbs is loaded and /dev/infiniband exists");
  }
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) names.emplace_back(ibv_get_device_name(devices[i]));
  ibv_free_device_list(devices);
  return names;
}

}  // namespace kvx::doctor
