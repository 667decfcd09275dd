#include "engine/transport/ucx/ucx_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "engine/transport/ucx/ucx_gpu_transports.h"
#include "engine/transport/ucx/ucx_status.h"

namespace kvx::engine::ucx {
namespace {

std::vector<std::string> splitList(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

bool isTransportName(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
  });
}

void appendUnique(std::vector<std::string>& list, std::string name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(std::move(name));
}

// Expands kvx's transport names into a UCX_TLS value.
Result<std::string> tlsFromOptions(const std::string& transports,
                                   const std::vector<std::string>& gpuTransports) {
  std::vector<std::string> tls;
  // Those of the library's GPU transports in `wanted`, in the library's order.
  auto addGpu = [&](std::initializer_list<std::string_view> wanted) {
    for (const std::string& gpu : gpuTransports) {
      if (std::find(wanted.begin(), wanted.end(), gpu) != wanted.end()) appendUnique(tls, gpu);
    }
  };
  for (const std::string& name : splitList(transports)) {
    if (name == "shm") {
      appendUnique(tls, "sm");
      appendUnique(tls, "self");
      addGpu({"cuda_copy", "cuda_ipc", "gdr_copy"});
    } else if (name == "tcp") {
      appendUnique(tls, "tcp");
      addGpu({"cuda_copy", "gdr_copy"});
    } else if (isTransportName(name)) {
      appendUnique(tls, name);
    } else {
      return invalidArgument("transport list '" + transports + "': '" + name +
                             "' is not a transport name (use shm, tcp, sm, or UCX_TLS names)");
    }
  }
  std::string joined;
  for (const std::string& name : tls) joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

// Whether a UCX_TLS value (empty: UCX's default of everything) may open `family`.
bool tlsMayUse(const std::string& tls, std::string_view family) {
  if (tls.empty() || tls.front() == '^') return true;
  for (const std::string& name : splitList(tls)) {
    if (name == "all" || name == family) return true;
    if (name == "cuda" && family.starts_with("cuda_")) return true;
    if (family == "mm" && (name == "sm" || name == "shm" || name == "posix" || name == "sysv")) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::vector<UcxSetting>> computeUcxSettings(const TransportOptions& options,
                                                   const EnvLookup& getEnv,
                                                   const std::vector<std::string>& gpuTransports) {
  std::vector<UcxSetting> settings;
  auto isSet = [&](const char* name) { return getEnv(name) != nullptr; };

  std::string tls;
  if (const char* userTls = getEnv("UCX_TLS")) {
    tls = userTls;
  } else if (!options.transports.empty()) {
    KVX_ASSIGN_OR_RETURN(tls, tlsFromOptions(options.transports, gpuTransports));
    settings.push_back({"UCX_TLS", {"TLS"}, tls});
  }
  if (!options.netDevices.empty() && !isSet("UCX_NET_DEVICES")) {
    settings.push_back({"UCX_NET_DEVICES", {"NET_DEVICES"}, options.netDevices});
  }
  // TX must not exceed RX, so the pair is kvx's or the user's, never half of each.
  if (tlsMayUse(tls, "tcp") && !isSet("UCX_TCP_TX_SEG_SIZE") && !isSet("UCX_TCP_RX_SEG_SIZE")) {
    // UCX 1.13 takes transport-level keys without their "TCP_" prefix; 1.22 only with it.
    settings.push_back({"UCX_TCP_TX_SEG_SIZE", {"TX_SEG_SIZE", "TCP_TX_SEG_SIZE"}, "256K"});
    settings.push_back({"UCX_TCP_RX_SEG_SIZE", {"RX_SEG_SIZE", "TCP_RX_SEG_SIZE"}, "512K"});
  }
  if (tlsMayUse(tls, "mm") && !isSet("UCX_MM_ERROR_HANDLING")) {
    settings.push_back({"UCX_MM_ERROR_HANDLING", {"MM_ERROR_HANDLING"}, "y"});
  }
  // UCX 1.22's cuda_ipc leaves get_zcopy off by default ("auto"), so a get of GPU memory
  // between two processes on one node falls back to software emulation over shared memory:
  // 0.7 GB/s instead of 907 GB/s for 8 MiB gets on an H100, with both CPUs busy. kvx's pull
  // mode is gets; turn them on wherever the library has cuda_ipc.
  const bool hasCudaIpc =
      std::find(gpuTransports.begin(), gpuTransports.end(), "cuda_ipc") != gpuTransports.end();
  if (hasCudaIpc && tlsMayUse(tls, "cuda_ipc") && !isSet("UCX_CUDA_IPC_ENABLE_GET_ZCOPY")) {
    settings.push_back({"UCX_CUDA_IPC_ENABLE_GET_ZCOPY", {"CUDA_IPC_ENABLE_GET_ZCOPY"}, "y"});
  }
  return settings;
}

Result<std::vector<UcxSetting>> computeUcxSettings(const TransportOptions& options) {
  return computeUcxSettings(
      options, [](const char* name) { return std::getenv(name); }, ucxGpuTransports());
}

std::string describeSettings(const std::vector<UcxSetting>& settings) {
  std::string text;
  for (const UcxSetting& s : settings) {
    text += (text.empty() ? "" : " ") + s.envName + "=" + s.value;
  }
  return text.empty() ? "(none)" : text;
}

Result<UcxConfigPtr> makeUcxConfig(const std::vector<UcxSetting>& settings) {
  ucp_config_t* raw = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &raw);
  if (status != UCS_OK) return fromUcs(status, "ucp_config_read");
  UcxConfigPtr config(raw);
  for (const UcxSetting& s : settings) {
    std::string tried;
    status = UCS_ERR_NO_ELEM;
    for (const std::string& key : s.keys) {
      status = ucp_config_modify(config.get(), key.c_str(), s.value.c_str());
      tried += (tried.empty() ? "" : ", ") + key;
      if (status != UCS_ERR_INVALID_PARAM && status != UCS_ERR_NO_ELEM) break;  // known name
    }
    if (status == UCS_ERR_INVALID_PARAM || status == UCS_ERR_NO_ELEM) {
      unsigned major = 0, minor = 0, release = 0;
      ucp_get_version(&major, &minor, &release);
      spdlog::info("UCX {}.{}.{} knows no setting {} (tried {}): kvx's default {}={} skipped",
                   major, minor, release, s.envName, tried, s.envName, s.value);
      continue;
    }
    if (status != UCS_OK) {
      return fromUcs(status, "ucp_config_modify " + tried + "=" + s.value + " (set " + s.envName +
                                 " to override)");
    }
  }
  return config;
}

std::string unreachableHint(const std::string& netDevices) {
  const char* fromEnv = std::getenv("UCX_NET_DEVICES");
  const std::string devices = fromEnv != nullptr && *fromEnv != '\0'
                                  ? std::string(fromEnv) + " (UCX_NET_DEVICES)"
                                  : (netDevices.empty() ? "every interface" : netDevices);
  return " (no device of this agent's data path, " + devices +
         ", reaches the peer's: agents on different hosts need net devices that reach each "
         "other, which auto chooses)";
}

}  // namespace kvx::engine::ucx
