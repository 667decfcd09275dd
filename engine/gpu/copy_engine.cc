#include "engine/gpu/copy_engine.h"

#include <cstdio>

namespace kvx::engine::gpu {

std::string_view toString(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return "host to device";
    case CopyKind::kDeviceToHost: return "device to host";
    case CopyKind::kDeviceToDevice: return "device to device";
  }
  return "unknown copy kind";
}

std::string describe(const CopyRequest& request) {
  char text[160];
  std::snprintf(text, sizeof text, "%s, %zu bytes, %p -> %p",
                std::string(toString(request.kind)).c_str(), request.length, request.source,
                request.destination);
  return text;
}

Status checkCopyRequest(const CopyRequest& request) {
  if (request.length > 0 && (request.destination == nullptr || request.source == nullptr)) {
    return invalidArgument("copy (" + describe(request) + ") has a null range");
  }
  return Status::ok();
}

}  // namespace kvx::engine::gpu
