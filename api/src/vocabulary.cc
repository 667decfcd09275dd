#include "kvx/agent_options.h"
#include "kvx/memory.h"
#include "kvx/transfer.h"

namespace kvx {

std::string_view toString(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost: return "host";
    case MemoryKind::kCuda: return "cuda";
  }
  return "unknown";
}

std::optional<MemoryKind> parseMemoryKind(std::string_view text) {
  if (text == "host") return MemoryKind::kHost;
  if (text == "cuda") return MemoryKind::kCuda;
  return std::nullopt;
}

std::string_view toString(GpuPath path) {
  switch (path) {
    case GpuPath::kAuto: return "auto";
    case GpuPath::kDirect: return "direct";
    case GpuPath::kStaged: return "staged";
  }
  return "unknown";
}

std::string_view toString(DataProtection protection) {
  switch (protection) {
    case DataProtection::kAuto: return "auto";
    case DataProtection::kHeaders: return "headers";
    case DataProtection::kAuthenticated: return "authenticated";
    case DataProtection::kEncrypted: return "encrypted";
  }
  return "unknown";
}

std::optional<DataProtection> parseDataProtection(std::string_view text) {
  if (text == "auto") return DataProtection::kAuto;
  if (text == "headers") return DataProtection::kHeaders;
  if (text == "authenticated") return DataProtection::kAuthenticated;
  if (text == "encrypted") return DataProtection::kEncrypted;
  return std::nullopt;
}

std::optional<GpuPath> parseGpuPath(std::string_view text) {
  if (text == "auto") return GpuPath::kAuto;
  if (text == "direct") return GpuPath::kDirect;
  if (text == "staged") return GpuPath::kStaged;
  return std::nullopt;
}

std::string_view toString(TransferOp op) { return op == TransferOp::kRead ? "READ" : "WRITE"; }

std::string_view toString(TransferState state) {
  switch (state) {
    case TransferState::kIdle: return "idle";
    case TransferState::kPending: return "pending";
    case TransferState::kDone: return "done";
    case TransferState::kFailed: return "failed";
  }
  return "unknown";
}

bool selectDataPath(AgentOptions& options, std::string_view name) {
  if (name == "shm" || name == "tcp") {
    options.transport = "ucx";
    options.ucxTransports = std::string(name);
  } else if (name == "socket" || name == "inproc") {
    options.transport = std::string(name);
    options.ucxTransports.clear();
  } else {
    return false;
  }
  return true;
}

}  // namespace kvx
