// doctor/hwloc_paths.h without hwloc: CMake compiles this file when pkg-config finds no hwloc.
#include "doctor/hwloc_paths.h"

namespace kvx::doctor {

bool hwlocBuiltIn() { return false; }

Result<std::vector<std::optional<PciPathKind>>> classifyWithHwloc(
    const std::filesystem::path& xmlFile, const std::vector<std::pair<std::string, std::string>>&) {
  return unimplemented("kvx was built without hwloc, so " + xmlFile.string() +
                       " is not read: install libhwloc-dev (scripts/install-deps.sh) and rebuild");
}

}  // namespace kvx::doctor
