#pragma once

// A cross-check of the sysfs topology (doctor/pci_path.h) against hwloc: when the root
// directory holds an hwloc XML export (kvx-doctor-hwloc.xml, e.g. from `lstopo --of xml` on
// the node), hwloc loads it and says how each GPU-NIC pair is connected. hwloc is optional:
// built in when pkg-config finds it (libhwloc-dev), and used only when that file exists.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "doctor/pci_path.h"
#include "kvx/result.h"

namespace kvx::doctor {

inline constexpr const char* kHwlocFixtureFile = "kvx-doctor-hwloc.xml";

// False when kvx was built without hwloc.
bool hwlocBuiltIn();

// For each pair of PCI addresses, the connection hwloc's topology shows: the deepest shared
// PCI bridge (same switch) or host bridge (same root complex), else whether the two hang under
// different packages (across sockets). nullopt for a pair whose device hwloc does not list.
// INVALID_ARGUMENT when the XML does not load; UNIMPLEMENTED when built without hwloc.
Result<std::vector<std::optional<PciPathKind>>> classifyWithHwloc(
    const std::filesystem::path& xmlFile,
    const std::vector<std::pair<std::string, std::string>>& addressPairs);

}  // namespace kvx::doctor
