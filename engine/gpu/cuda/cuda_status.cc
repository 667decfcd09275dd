#include "engine/gpu/cuda/cuda_status.h"

#include <string>

namespace kvx::engine::gpu::cuda {

namespace {

StatusCode codeFor(cudaError_t error) {
  switch (error) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNotSupported: return StatusCode::kFailedPrecondition;
    case cudaErrorMemoryAllocation: return StatusCode::kResourceExhausted;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidMemcpyDirection: return StatusCode::kInvalidArgument;
    default: return StatusCode::kTransportError;
  }
}

}  // namespace

Status cudaStatus(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return Status(codeFor(error), std::string(what) + ": " + cudaGetErrorName(error) + ": " +
                                    cudaGetErrorString(error) + " (error " +
                                    std::to_string(static_cast<int>(error)) + ")");
}

}  // namespace kvx::engine::gpu::cuda
