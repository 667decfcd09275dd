#include "api/python/src/binding_support.h"

#include <optional>

#include "api/python/src/status_errors.h"

namespace kvx::python {

namespace py = pybind11;

std::chrono::milliseconds toMillis(double seconds, const char* what) {
  if (!(seconds >= 0) || seconds > 1e9) {
    raise(invalidArgument(std::string(what) + " must be a number of seconds >= 0, not " +
                          std::to_string(seconds)));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0 + 0.5));
}

MemoryKind kindFrom(const std::string& text) {
  std::optional<MemoryKind> kind = parseMemoryKind(text);
  if (!kind) raise(invalidArgument("memory kind '" + text + "' is neither 'host' nor 'cuda'"));
  return *kind;
}

std::optional<py::object> popOption(py::dict& options, const char* key) {
  if (!options.contains(key)) return std::nullopt;
  py::object value = options[key];
  PyDict_DelItemString(options.ptr(), key);
  if (value.is_none()) return std::nullopt;
  return value;
}

AgentOptions takeAgentOptions(const std::string& name, py::dict& options) {
  AgentOptions out;
  out.name = name;
  if (auto v = popOption(options, "listen_address")) out.listenAddress = v->cast<std::string>();
  if (auto v = popOption(options, "data_path")) {
    const std::string path = v->cast<std::string>();
    if (!selectDataPath(out, path)) {
      raise(invalidArgument("unknown data path '" + path + "' (shm, tcp or socket)"));
    }
  }
  if (auto v = popOption(options, "net_devices")) out.ucxNetDevices = v->cast<std::string>();
  if (auto v = popOption(options, "auth_token")) out.authToken = v->cast<std::string>();
  if (auto v = popOption(options, "application_info")) {
    out.applicationInfo = v->cast<std::string>();
  }
  if (auto v = popOption(options, "gpu_path")) {
    const std::string text = v->cast<std::string>();
    std::optional<GpuPath> path = parseGpuPath(text);
    if (!path) raise(invalidArgument("GPU path '" + text + "' is not auto, direct or staged"));
    out.gpuPath = *path;
  }
  if (auto v = popOption(options, "data_protection")) {
    const std::string text = v->cast<std::string>();
    std::optional<DataProtection> protection = parseDataProtection(text);
    if (!protection) {
      raise(invalidArgument("data protection '" + text +
                            "' is not auto, headers, authenticated or encrypted"));
    }
    out.dataProtection = *protection;
  }
  if (auto v = popOption(options, "caller_progress"); v && v->cast<bool>()) {
    out.progressMode = ProgressMode::kCaller;
  }
  if (auto v = popOption(options, "connect_timeout")) {
    out.connectTimeout = toMillis(v->cast<double>(), "connect_timeout");
  }
  if (auto v = popOption(options, "peer_timeout")) {
    out.peerTimeout = toMillis(v->cast<double>(), "peer_timeout");
  }
  if (auto v = popOption(options, "heartbeat_interval")) {
    out.heartbeatInterval = toMillis(v->cast<double>(), "heartbeat_interval");
  }
  return out;
}

void refuseUnknown(const py::dict& options, const char* what) {
  for (auto item : options) {
    throw py::type_error(std::string(what) + " got an unexpected keyword argument '" +
                         std::string(py::str(item.first)) + "'");
  }
}

}  // namespace kvx::python
