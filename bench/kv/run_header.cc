#include "bench/kv/run_header.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <fstream>

#include "doctor/ucx_probe.h"
#include "engine/transport/ucx/ucx_config.h"

namespace kvx::bench {
namespace {

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::string ucxEnvironment() {
  std::string out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("UCX_", 0) == 0) out += (out.empty() ? "" : " ") + text;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

RunHeader describeRun(const std::vector<std::string>& transports,
                      const std::vector<std::string>& scenarios, const std::string& commandLine) {
  RunHeader h;
  utsname uts{};
  ::uname(&uts);
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.lines.push_back(fmt::format("kvx bench: {}", commandLine));
  h.lines.push_back(fmt::format("kvx {}, UCX {}; {} x {}; Linux {}", KVX_VERSION_STRING,
                                ucp_get_version_string(), cores, cpuModel(), uts.release));
  nlohmann::json settingsJson = nlohmann::json::object();
  for (const std::string& transport : transports) {
    engine::TransportOptions options{"bench", transport, transport == "tcp" ? "lo" : ""};
    auto settings = engine::ucx::computeUcxSettings(options);
    const std::string text =
        settings.isOk() ? engine::ucx::describeSettings(*settings) : settings.status().toString();
    h.lines.push_back(fmt::format("UCX settings for {}: {}", transport, text));
    settingsJson[transport] = text;
  }
  h.lines.push_back("UCX_* in the environment: " + ucxEnvironment());
  auto facts = doctor::makeUcxLibraryProbe()->probe();
  const bool cuda = facts.isOk() && facts->supportsCuda();
  const std::string gpu = fmt::format(
      "GPUDirect: off, host memory only: this run's pools are in host memory ({})",
      cuda ? "UCX can move CUDA memory"
           : "UCX " + std::string(ucp_get_version_string()) + " was built without CUDA support");
  h.lines.push_back(gpu);
  h.json = {{"commandLine", commandLine},
            {"kvxVersion", KVX_VERSION_STRING},
            {"ucxVersion", ucp_get_version_string()},
            {"cpu", cpuModel()},
            {"cores", cores},
            {"kernel", uts.release},
            {"ucxSettings", settingsJson},
            {"ucxEnvironment", ucxEnvironment()},
            {"gpuDirect", gpu},
            {"scenarios", scenarios}};
  return h;
}

}  // namespace kvx::bench
