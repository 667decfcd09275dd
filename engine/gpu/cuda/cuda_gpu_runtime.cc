#include "engine/gpu/cuda/cuda_gpu_runtime.h"

#include <cuda_runtime_api.h>

#include <cstddef>

#include "engine/gpu/cuda/cuda_copy_engine.h"
#include "engine/gpu/cuda/cuda_status.h"
#include "engine/gpu/cuda/device_guard.h"
#include "engine/gpu/cuda/pinned_staging_allocator.h"

namespace kvx::engine::gpu::cuda {

namespace {

std::string versionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace

std::string CudaGpuRuntime::describe() const {
  int runtime = 0;
  int driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  return "CUDA runtime " + versionText(runtime) + ", " +
         (driver > 0 ? "driver " + versionText(driver) : std::string("no CUDA driver"));
}

Result<int> CudaGpuRuntime::deviceCount() const {
  int count = 0;
  KVX_RETURN_IF_ERROR(cudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  return count;
}

MemoryProbe CudaGpuRuntime::probe(const void* address) const {
  Result<int> devices = deviceCount();
  if (!devices.isOk() || *devices == 0) {
    // No device in this process, so no device memory either.
    return MemoryProbe{MemoryProbe::Kind::kHost, -1,
                       "no CUDA device visible" +
                           (devices.isOk() ? std::string() : ": " + devices.status().message())};
  }
  cudaPointerAttributes attributes{};
  Status status =
      cudaStatus(cudaPointerGetAttributes(&attributes, address), "cudaPointerGetAttributes");
  if (!status.isOk()) return MemoryProbe{MemoryProbe::Kind::kUnknown, -1, status.message()};
  switch (attributes.type) {
    case cudaMemoryTypeUnregistered:
      return MemoryProbe{MemoryProbe::Kind::kHost, -1, "cudaPointerGetAttributes: unregistered"};
    case cudaMemoryTypeHost:
      return MemoryProbe{MemoryProbe::Kind::kHost, -1,
                         "cudaPointerGetAttributes: pinned host memory"};
    case cudaMemoryTypeDevice:
      return MemoryProbe{MemoryProbe::Kind::kCuda, attributes.device,
                         "cudaPointerGetAttributes: device memory"};
    case cudaMemoryTypeManaged:
      return MemoryProbe{MemoryProbe::Kind::kManaged, attributes.device,
                         "cudaPointerGetAttributes: managed memory"};
  }
  return MemoryProbe{
      MemoryProbe::Kind::kUnknown, -1,
      "cudaPointerGetAttributes: memory type " + std::to_string(static_cast<int>(attributes.type))};
}

Result<void*> CudaGpuRuntime::allocateDevice(std::size_t bytes, int device) {
  DeviceGuard guard(device);
  KVX_RETURN_IF_ERROR(guard.status());
  void* address = nullptr;
  KVX_RETURN_IF_ERROR(cudaStatus(
      cudaMalloc(&address, bytes),
      "cudaMalloc of " + std::to_string(bytes) + " bytes on device " + std::to_string(device)));
  return address;
}

Status CudaGpuRuntime::freeDevice(void* address) {
  return cudaStatus(cudaFree(address), "cudaFree");
}

Status CudaGpuRuntime::bindThread(int device) {
  // cudaSetDevice makes the device's primary context current (creating it if need be).
  return cudaStatus(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
}

Result<std::shared_ptr<StagingAllocator>> CudaGpuRuntime::pinnedAllocator() {
  return std::shared_ptr<StagingAllocator>(std::make_shared<PinnedStagingAllocator>());
}

namespace {

// True when CUDA knows `address` as pinned host memory (registered or allocated by it).
bool pinnedByCuda(const void* address) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, address) != cudaSuccess) {
    cudaGetLastError();  // not sticky: leave no error behind for the next call to report
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

Result<HostPinning> CudaGpuRuntime::pinHost(void* address, std::size_t bytes) {
  if (bytes == 0) return invalidArgument("pinning 0 bytes of host memory");
  // A UCX built with CUDA registers the host memory it allocates with CUDA itself.
  const auto* last = static_cast<const std::byte*>(address) + bytes - 1;
  if (pinnedByCuda(address) && pinnedByCuda(last)) return HostPinning::kAlreadyPinned;
  const cudaError_t error = cudaHostRegister(address, bytes, cudaHostRegisterPortable);
  if (error != cudaSuccess) cudaGetLastError();
  KVX_RETURN_IF_ERROR(cudaStatus(
      error, "cudaHostRegister of " + std::to_string(bytes) + " bytes of staging memory"));
  return HostPinning::kPinned;
}

void CudaGpuRuntime::unpinHost(void* address) { cudaHostUnregister(address); }

Result<std::unique_ptr<CopyEngine>> CudaGpuRuntime::createCopyEngine(
    const CopyEngineOptions& options) {
  return CudaCopyEngine::create(options);
}

}  // namespace kvx::engine::gpu::cuda
