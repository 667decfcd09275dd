#pragma once

// DeviceGuard: makes a CUDA device current on this thread for a scope and restores the
// previous one after, so kvx never changes the device its caller's thread works on.
// Compiled only with CUDA.

#include <cuda_runtime_api.h>

#include <string>

#include "engine/gpu/cuda/cuda_status.h"

namespace kvx::engine::gpu::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ == device) return;
    status_ = cudaStatus(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    changed_ = status_.isOk() && previous_ >= 0;
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  // Whether the device could be made current.
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  bool changed_ = false;
  Status status_;
};

}  // namespace kvx::engine::gpu::cuda
