#pragma once

// The one place where CUDA runtime errors become kvx::Status, keeping CUDA's own name and
// text for the error. Compiled only with CUDA.

#include <cuda_runtime_api.h>

#include <string_view>

#include "kvx/status.h"

namespace kvx::engine::gpu::cuda {

// OK for cudaSuccess; otherwise "<what>: cudaErrorX: <CUDA's description> (error N)" with a
// code that says what the caller can do: FAILED_PRECONDITION for no driver or device,
// RESOURCE_EXHAUSTED for memory, INVALID_ARGUMENT for bad values or pointers, TRANSPORT_ERROR
// (the data path failed) otherwise. Also clears the thread's last CUDA error, so a
// non-sticky error is not reported again by a later call.
Status cudaStatus(cudaError_t error, std::string_view what);

}  // namespace kvx::engine::gpu::cuda
