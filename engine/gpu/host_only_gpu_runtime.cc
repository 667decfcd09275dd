#include "engine/gpu/host_only_gpu_runtime.h"

namespace kvx::engine::gpu {

namespace {

constexpr const char* kWithoutCuda =
    "kvx was built without CUDA (configure with the CUDA toolkit installed and "
    "-DKVX_WITH_CUDA=ON)";

}  // namespace

std::string HostOnlyGpuRuntime::describe() const { return "built without CUDA"; }

Result<int> HostOnlyGpuRuntime::deviceCount() const { return unimplemented(kWithoutCuda); }

MemoryProbe HostOnlyGpuRuntime::probe(const void*) const {
  return MemoryProbe{MemoryProbe::Kind::kUnknown, -1, kWithoutCuda};
}

Result<void*> HostOnlyGpuRuntime::allocateDevice(std::size_t bytes, int device) {
  return unimplemented("cannot allocate " + std::to_string(bytes) + " bytes on CUDA device " +
                       std::to_string(device) + ": " + kWithoutCuda);
}

Status HostOnlyGpuRuntime::freeDevice(void*) {
  return unimplemented(std::string("cannot free CUDA memory: ") + kWithoutCuda);
}

Status HostOnlyGpuRuntime::bindThread(int) {
  return unimplemented(std::string("no CUDA device to bind: ") + kWithoutCuda);
}

Result<std::shared_ptr<StagingAllocator>> HostOnlyGpuRuntime::pinnedAllocator() {
  return unimplemented(std::string("no pinned staging memory: ") + kWithoutCuda);
}

Result<HostPinning> HostOnlyGpuRuntime::pinHost(void*, std::size_t) {
  return unimplemented(std::string("cannot pin staging memory: ") + kWithoutCuda);
}

void HostOnlyGpuRuntime::unpinHost(void*) {}

Result<std::unique_ptr<CopyEngine>> HostOnlyGpuRuntime::createCopyEngine(const CopyEngineOptions&) {
  return unimplemented(std::string("no CUDA copy engine: ") + kWithoutCuda);
}

}  // namespace kvx::engine::gpu
