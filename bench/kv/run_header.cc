#include "bench/kv/run_header.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "bench/kv/bare_match.h"
#include "bench/kv/gpu_copy_reference.h"
#include "doctor/ucx_probe.h"
#include "engine/gpu/gpu_runtime.h"
#include "engine/transport/ucx/ucx_config.h"
#include "engine/transport/ucx/ucx_gpu_transports.h"

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

constexpr const char* kGpuDirect = "GPUDirect: ";
constexpr const char* kGpuMemory = "GPU memory: ";
constexpr const char* kDataPath = "Data path reported by the agents: ";
constexpr const char* kBareGpu =
    "bare reference: GPU memory (kvx-bare-ucp --memory cuda: the same UCX moving registered "
    "device memory), device ";
constexpr const char* kBareHost =
    "bare reference: host memory (kvx-bare-ucp moves host buffers: its ratio compares kvx's GPU "
    "path with a host-memory loop)";

// The GPUDirect line before the agents ran: what UCX can do and what --gpu-path asks.
// `whyNotCuda`: why UCX cannot move CUDA memory, "" when it can.
std::string expectedGpuDirect(const MemorySetting& memory, const std::string& whyNotCuda,
                              bool socketOnly) {
  const bool ucxCuda = whyNotCuda.empty();
  const std::string& noCuda = whyNotCuda;
  if (memory.kind == "cuda" && socketOnly && memory.gpuPath != "staged") {
    return fmt::format(
        "{}off: kvx's socket transport moves CUDA memory itself, through host "
        "memory (a copy engine, then TCP), when the GPU runtime has a device",
        kGpuDirect);
  }
  if (memory.kind != "cuda") {
    return fmt::format("{}off, host memory only: this run's pools are in host memory ({})",
                       kGpuDirect, ucxCuda ? "UCX can move CUDA memory" : noCuda);
  }
  if (memory.gpuPath == "staged") {
    return fmt::format("{}off, staged through host: --gpu-path staged{}", kGpuDirect,
                       ucxCuda ? " (UCX could move CUDA memory)" : " (" + noCuda + ")");
  }
  if (ucxCuda) return fmt::format("{}on (UCX moves CUDA memory)", kGpuDirect);
  if (memory.gpuPath == "direct") {
    return fmt::format("{}requested (--gpu-path direct), but {}: the agents will refuse it",
                       kGpuDirect, noCuda);
  }
  return fmt::format("{}off, staged through host: {}", kGpuDirect, noCuda);
}

std::string gpuMemoryLine(const MemorySetting& memory, const std::string& runtime) {
  return fmt::format("{}the agents' pools on CUDA device {}, --gpu-path {}; GPU runtime: {}",
                     kGpuMemory, memory.device, memory.gpuPath, runtime);
}

// The GPUDirect line a data path states (Agent::dataPathDescription: "<UCX endpoint>; GPU
// memory: staged through host (<why>); peer's GPU memory: ..."), or "" when it says nothing
// of GPU memory.
std::string liveGpuDirect(const std::string& path) {
  if (const auto at = path.find(kGpuDirect); at != std::string::npos) return path.substr(at);
  const std::string gpuMemory = "GPU memory: ";
  const auto at = path.find(gpuMemory);
  if (at == std::string::npos) return {};
  const std::string gpu = path.substr(at + gpuMemory.size());
  const std::string mine = gpu.substr(0, gpu.find("; peer's GPU memory: "));
  const std::string staged = "staged through host (";
  if (mine.rfind(staged, 0) == 0 && mine.back() == ')') {
    return kGpuDirect + std::string("off, staged through host: ") +
           mine.substr(staged.size(), mine.size() - staged.size() - 1);
  }
  std::string endpoint = path.substr(0, at);
  while (!endpoint.empty() && (endpoint.back() == ' ' || endpoint.back() == ';')) {
    endpoint.pop_back();
  }
  // A transport that moves GPU memory through host memory (socket) says how.
  const std::string copied = "direct (the transport moves it itself, ";
  if (mine.rfind(copied, 0) == 0 && mine.back() == ')') {
    return kGpuDirect + std::string("off (") + endpoint +
           "): the transport moves CUDA memory itself, " +
           mine.substr(copied.size(), mine.size() - copied.size() - 1);
  }
  if (mine.rfind("direct", 0) == 0 && mine.find(" and ") == std::string::npos) {
    return kGpuDirect + std::string("on (") + endpoint + ")";
  }
  return kGpuDirect + gpu;
}

void replaceLine(RunHeader& header, const std::string& prefix, const std::string& line) {
  for (std::string& existing : header.lines) {
    if (existing.rfind(prefix, 0) == 0) {
      existing = line;
      return;
    }
  }
  header.lines.push_back(line);
}

}  // namespace

RunHeader describeRun(const std::vector<std::string>& transports,
                      const std::vector<std::string>& scenarios, const std::string& commandLine,
                      const MemorySetting& memory) {
  RunHeader h;
  utsname uts{};
  ::uname(&uts);
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.lines.push_back(fmt::format("kvx bench: {}", commandLine));
  h.lines.push_back(fmt::format("kvx {}, UCX {}; {} x {}; Linux {}", KVX_VERSION_STRING,
                                ucp_get_version_string(), cores, cpuModel(), uts.release));
  nlohmann::json settingsJson = nlohmann::json::object();
  for (const std::string& dataPath : transports) {
    const std::string transport = bareTransportFor(dataPath);
    if (transport != dataPath) {
      h.lines.push_back(dataPath + ": kvx's own TCP transport (no UCX); its bare reference is " +
                        "UCX over " + transport);
    }
    engine::TransportOptions options{"bench", transport, transport == "tcp" ? "lo" : ""};
    auto settings = engine::ucx::computeUcxSettings(options);
    const std::string text =
        settings.isOk() ? engine::ucx::describeSettings(*settings) : settings.status().toString();
    h.lines.push_back(fmt::format("UCX settings for {}: {}", transport, text));
    settingsJson[transport] = text;
  }
  h.lines.push_back("UCX_* in the environment: " + ucxEnvironment());
  auto facts = doctor::makeUcxLibraryProbe()->probe();
  const std::string whyNotCuda =
      facts.isOk() ? engine::ucx::ucxWhyNotCuda(facts->version, facts->supportsCuda())
                   : "UCX could not be queried: " + facts.status().message();
  bool socketOnly = !transports.empty();
  bool gpuBare = false;
  for (const std::string& dataPath : transports) {
    socketOnly = socketOnly && dataPath == "socket";
    gpuBare = gpuBare || bareOnGpu(memory.kind, memory.gpuPath, dataPath);
  }
  const std::string gpu = expectedGpuDirect(memory, whyNotCuda, socketOnly);
  nlohmann::json memoryJson = {{"kind", memory.kind}};
  if (memory.kind == "cuda") {
    const std::string runtime = engine::gpu::gpuRuntime().describe();
    h.lines.push_back(gpuMemoryLine(memory, runtime));
    memoryJson.update(
        {{"device", memory.device}, {"gpuPath", memory.gpuPath}, {"gpuRuntime", runtime}});
  }
  h.lines.push_back(gpu);
  if (memory.kind == "cuda") {
    h.lines.push_back(gpuBare ? fmt::format("{}{}", kBareGpu, memory.device)
                              : std::string(kBareHost));
    // On an emulated runtime the copies are CPU memcpys (under a sanitizer, every byte
    // checked): 256 MiB copies were most of a quick run there, for a figure that means nothing.
    auto reference = measureGpuCopyReference(memory.device, engine::gpu::gpuRuntime().emulated()
                                                                ? std::size_t{32} << 20
                                                                : std::size_t{256} << 20);
    if (reference.isOk()) {
      h.lines.push_back(describeGpuCopyReference(*reference));
      memoryJson["gpuCopyReference"] = {{"bytes", reference->bytes},
                                        {"copies", reference->copies},
                                        {"engine", reference->engine},
                                        {"deviceToDeviceGBps", reference->deviceToDevice},
                                        {"hostToDeviceGBps", reference->hostToDevice},
                                        {"deviceToHostGBps", reference->deviceToHost}};
    } else {
      h.lines.push_back("GPU copy reference: not measured: " + reference.status().toString());
    }
  }
  h.json = {{"commandLine", commandLine},
            {"kvxVersion", KVX_VERSION_STRING},
            {"ucxVersion", ucp_get_version_string()},
            {"cpu", cpuModel()},
            {"cores", cores},
            {"kernel", uts.release},
            {"ucxSettings", settingsJson},
            {"ucxEnvironment", ucxEnvironment()},
            {"gpuDirect", gpu},
            {"gpuDirectFrom", "expected"},
            {"memory", memoryJson},
            {"dataPaths", nlohmann::json::array()},
            {"bareReference", gpuBare ? "cuda memory" : "host memory"},
            {"scenarios", scenarios}};
  return h;
}

void addLivePath(RunHeader& header, const std::vector<CaseOutcome>& outcomes,
                 const MemorySetting& memory) {
  std::vector<std::string> paths;
  std::string runtime;
  for (const CaseOutcome& o : outcomes) {
    if (!o.kvx) continue;
    for (const std::string& path : o.kvx->dataPaths) {
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    }
    if (runtime.empty()) runtime = o.kvx->gpuRuntime;
  }
  if (!paths.empty()) {
    std::string joined;
    for (const std::string& path : paths) joined += (joined.empty() ? "" : " | ") + path;
    replaceLine(header, kDataPath, kDataPath + joined);
    header.json["dataPaths"] = paths;
  }
  if (memory.kind != "cuda") return;
  if (!runtime.empty()) {
    replaceLine(header, kGpuMemory, gpuMemoryLine(memory, runtime));
    header.json["memory"]["gpuRuntime"] = runtime;
  }
  // A data path that states GPUDirect's state is the live one; an agent that refused the
  // path (FAILED_PRECONDITION) says why.
  std::string live;
  for (const std::string& path : paths) {
    if (live.empty()) live = liveGpuDirect(path);
  }
  for (const CaseOutcome& o : outcomes) {
    if (live.empty() && !o.kvx && o.error.code() == StatusCode::kFailedPrecondition) {
      live = fmt::format("{}refused (--gpu-path {}): {}", kGpuDirect, memory.gpuPath,
                         o.error.message());
    }
  }
  if (live.empty()) return;
  replaceLine(header, kGpuDirect, live);
  header.json["gpuDirect"] = live;
  header.json["gpuDirectFrom"] = "agents";
}

}  // namespace kvx::bench
