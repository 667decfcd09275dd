#include "engine/gpu/memory_probe.h"

#include <cstdio>

#include "engine/gpu/gpu_runtime.h"

namespace kvx::engine::gpu {

namespace {

std::string rangeText(const void* address, std::uint64_t length) {
  char text[64];
  std::snprintf(text, sizeof text, "[%p+%llu)", address, static_cast<unsigned long long>(length));
  return text;
}

std::string declaredText(MemoryKind kind, int device) {
  if (kind == MemoryKind::kCuda) return "CUDA memory of device " + std::to_string(device);
  return "host memory";
}

std::string foundText(const MemoryProbe& probe) {
  switch (probe.kind) {
    case MemoryProbe::Kind::kHost: return "host memory";
    case MemoryProbe::Kind::kCuda: return "CUDA memory of device " + std::to_string(probe.device);
    case MemoryProbe::Kind::kManaged:
      return "CUDA managed memory of device " + std::to_string(probe.device);
    case MemoryProbe::Kind::kUnknown: return "memory of unknown kind";
  }
  return "memory of unknown kind";
}

// OK if one probed byte agrees with the declaration; the reason otherwise.
Status checkOne(const MemoryProbe& found, MemoryKind kind, int device, const std::string& range,
                const char* which) {
  const std::string head = "memory " + range + " was declared " + declaredText(kind, device) +
                           " but its " + which + " byte is " + foundText(found);
  const std::string why = found.detail.empty() ? "" : " (" + found.detail + ")";
  if (kind == MemoryKind::kHost) {
    if (found.kind == MemoryProbe::Kind::kCuda) {
      return failedPrecondition(head + why + "; declare it MemoryKind::kCuda with device " +
                                std::to_string(found.device));
    }
    return Status::ok();  // host, managed, or the runtime cannot tell
  }
  switch (found.kind) {
    case MemoryProbe::Kind::kCuda:
    case MemoryProbe::Kind::kManaged:
      if (found.device == device) return Status::ok();
      return failedPrecondition(head + why + "; declare device " + std::to_string(found.device));
    case MemoryProbe::Kind::kHost:
      return failedPrecondition(head + why + "; declare it MemoryKind::kHost");
    case MemoryProbe::Kind::kUnknown:
      return unimplemented("memory " + range + " was declared " + declaredText(kind, device) +
                           " but kvx cannot use CUDA memory" + why);
  }
  return internalError("unknown memory probe kind");
}

}  // namespace

std::string_view toString(MemoryProbe::Kind kind) {
  switch (kind) {
    case MemoryProbe::Kind::kHost: return "host";
    case MemoryProbe::Kind::kCuda: return "cuda";
    case MemoryProbe::Kind::kManaged: return "managed";
    case MemoryProbe::Kind::kUnknown: return "unknown";
  }
  return "unknown";
}

MemoryProbe probeMemory(const void* address) { return gpuRuntime().probe(address); }

Status checkDeclaredKind(const void* address, std::uint64_t length, MemoryKind declaredKind,
                         int declaredDevice) {
  return checkDeclaredKind(address, length, declaredKind, declaredDevice, probeMemory);
}

Status checkDeclaredKind(const void* address, std::uint64_t length, MemoryKind declaredKind,
                         int declaredDevice, const MemoryProber& probe) {
  const std::string range = rangeText(address, length);
  if (address == nullptr) return invalidArgument("memory " + range + " has a null address");
  KVX_RETURN_IF_ERROR(checkOne(probe(address), declaredKind, declaredDevice, range, "first"));
  if (length > 1) {
    const void* last = static_cast<const std::byte*>(address) + (length - 1);
    KVX_RETURN_IF_ERROR(checkOne(probe(last), declaredKind, declaredDevice, range, "last"));
  }
  return Status::ok();
}

}  // namespace kvx::engine::gpu
