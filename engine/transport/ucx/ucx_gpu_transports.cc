#include "engine/transport/ucx/ucx_gpu_transports.h"

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <charconv>
#include <string_view>
#include <utility>

namespace kvx::engine::ucx {
namespace {

// uct component name -> the UCX_TLS name of its transport.
constexpr std::pair<std::string_view, std::string_view> kGpuComponents[] = {
    {"cuda_cpy", "cuda_copy"}, {"cuda_ipc", "cuda_ipc"}, {"gdr_copy", "gdr_copy"}};

std::vector<std::string> queryGpuTransports() {
  std::vector<std::string> found;
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (uct_query_components(&components, &count) != UCS_OK) return found;
  for (const auto& [component, transport] : kGpuComponents) {
    for (unsigned i = 0; i < count; ++i) {
      uct_component_attr_t attr{};
      attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
      if (uct_component_query(components[i], &attr) == UCS_OK && attr.name == component) {
        found.emplace_back(transport);
        break;
      }
    }
  }
  uct_release_component_list(components);
  return found;
}

}  // namespace

bool ucxRmaTakesGpuMemory(unsigned major, unsigned minor) {
  return major > 1 || (major == 1 && minor >= 16);
}

bool ucxRmaTakesGpuMemory(std::string_view version) {
  unsigned major = 0, minor = 0;
  const char* end = version.data() + version.size();
  auto [afterMajor, majorError] = std::from_chars(version.data(), end, major);
  if (majorError != std::errc() || afterMajor == end || *afterMajor != '.') return false;
  auto [afterMinor, minorError] = std::from_chars(afterMajor + 1, end, minor);
  if (minorError != std::errc()) return false;
  return ucxRmaTakesGpuMemory(major, minor);
}

std::string ucxGpuRmaLimit(std::string_view version) {
  if (ucxRmaTakesGpuMemory(version)) return "";
  return "UCX " + std::string(version) +
         " was built with CUDA, but its one-sided put/get cannot take GPU memory before UCX "
         "1.16 (it would read the device buffer with the CPU)";
}

std::string ucxWhyNotCuda(std::string_view version, bool builtWithCuda) {
  // A UCX built with CUDA whose CUDA modules cannot load (no GPU driver) looks the same.
  if (!builtWithCuda) {
    return "UCX " + std::string(version) +
           " was built without CUDA support, or its CUDA transports did not load (no GPU "
           "driver)";
  }
  return ucxGpuRmaLimit(version);
}

const std::vector<std::string>& ucxLibraryGpuTransports() {
  static const std::vector<std::string> transports = queryGpuTransports();
  return transports;
}

const std::vector<std::string>& ucxGpuTransports() {
  static const std::vector<std::string> none;
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return ucxRmaTakesGpuMemory(major, minor) ? ucxLibraryGpuTransports() : none;
}

}  // namespace kvx::engine::ucx
