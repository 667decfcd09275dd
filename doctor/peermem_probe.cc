#include "doctor/peermem_probe.h"

#include <sstream>

namespace kvx::doctor {

PeermemState probePeermem(const SystemRoot& root) {
  static constexpr const char* kModules[] = {"nvidia_peermem", "nv_peer_mem"};
  PeermemState state;
  if (auto modules = root.readText("/proc/modules"); modules.isOk()) {
    state.modulesReadable = true;
    std::istringstream lines(*modules);
    std::string line;
    while (std::getline(lines, line)) {
      const std::string name = line.substr(0, line.find(' '));
      for (const char* module : kModules) {
        if (name == module) return {true, module, "/proc/modules", true};
      }
    }
  }
  for (const char* module : kModules) {
    const std::string dir = std::string("/sys/module/") + module;
    if (root.exists(dir)) return {true, module, dir, state.modulesReadable};
  }
  return state;
}

}  // namespace kvx::doctor
