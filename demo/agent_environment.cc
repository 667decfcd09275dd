#include "demo/agent_environment.h"

#include <unistd.h>  // environ

#include <cstdlib>
#include <string>
#include <vector>

namespace kvx::demo {

bool keptForAgents(std::string_view name) {
  if (!name.starts_with("KVX_")) return true;
  return name == "KVX_GPU_RUNTIME" || name == "KVX_UCX_PROBE";
}

void clearAgentEnvironment() {
  std::vector<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    const std::string_view name = text.substr(0, text.find('='));
    if (!keptForAgents(name)) names.emplace_back(name);
  }
  for (const std::string& name : names) ::unsetenv(name.c_str());
}

}  // namespace kvx::demo
