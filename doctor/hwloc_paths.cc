// doctor/hwloc_paths.h with hwloc: compiled only when CMake finds it.
#include "doctor/hwloc_paths.h"

#include <hwloc.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_set>

namespace kvx::doctor {
namespace {

struct TopologyCloser {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyCloser>;

hwloc_obj_t packageOf(hwloc_topology_t topology, hwloc_obj_t object) {
  hwloc_obj_t normal = hwloc_get_non_io_ancestor_obj(topology, object);
  if (normal == nullptr || normal->type == HWLOC_OBJ_PACKAGE) return normal;
  return hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, normal);
}

// hwloc_get_common_ancestor_obj compares depths, which I/O objects do not order; walk parents.
PciPathKind classify(hwloc_topology_t topology, hwloc_obj_t a, hwloc_obj_t b) {
  std::unordered_set<hwloc_obj_t> above;
  for (hwloc_obj_t p = a->parent; p != nullptr; p = p->parent) above.insert(p);
  hwloc_obj_t shared = b->parent;
  while (shared != nullptr && above.count(shared) == 0) shared = shared->parent;
  if (shared != nullptr && shared->type == HWLOC_OBJ_BRIDGE) {
    return shared->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST
               ? PciPathKind::kSameRootComplex
               : PciPathKind::kSameSwitch;
  }
  hwloc_obj_t packageA = packageOf(topology, a);
  hwloc_obj_t packageB = packageOf(topology, b);
  if (packageA != nullptr && packageB != nullptr && packageA != packageB) {
    return PciPathKind::kAcrossSockets;
  }
  return PciPathKind::kDifferentRootComplexes;
}

}  // namespace

bool hwlocBuiltIn() { return true; }

Result<std::vector<std::optional<PciPathKind>>> classifyWithHwloc(
    const std::filesystem::path& xmlFile,
    const std::vector<std::pair<std::string, std::string>>& addressPairs) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return internalError("hwloc_topology_init failed");
  TopologyPtr topology(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_set_xml(raw, xmlFile.c_str()) != 0 || hwloc_topology_load(raw) != 0) {
    return invalidArgument("hwloc cannot load " + xmlFile.string() + ": " + std::strerror(errno) +
                           " (is it an hwloc 2 XML export?)");
  }
  std::vector<std::optional<PciPathKind>> kinds;
  for (const auto& [first, second] : addressPairs) {
    hwloc_obj_t a = hwloc_get_pcidev_by_busidstring(raw, first.c_str());
    hwloc_obj_t b = hwloc_get_pcidev_by_busidstring(raw, second.c_str());
    kinds.push_back(a != nullptr && b != nullptr ? std::optional(classify(raw, a, b))
                                                 : std::nullopt);
  }
  return kinds;
}

}  // namespace kvx::doctor
