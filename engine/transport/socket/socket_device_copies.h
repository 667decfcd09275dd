#pragma once

// SocketDeviceCopies: how the socket transport reaches GPU memory. The transport reads and
// writes with the CPU, which must never dereference a device pointer; bytes of a GPU region
// go through host memory instead, copied by a copy engine of the region's device (made on
// first use, one per device). This is what UCX's tcp transport does with cuda_copy: GPU
// memory over plain TCP, for GPU nodes without RDMA and for tests on the fake GPU runtimes.
//
// The copies are blocking: the transport waits for each one under its lock (up to
// kCopyDeadline; a copy still running then has its engine closed, which waits for it, so
// that no byte moves after the failure is reported). Correct, not fast: the wire and the
// copies do not overlap.
//
// Thread safety: none of its own; the transport calls it under its lock.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "engine/gpu/copy_engine.h"
#include "engine/gpu/gpu_runtime.h"
#include "kvx/result.h"

namespace kvx::engine::socket {

inline constexpr std::chrono::seconds kCopyDeadline{30};

class SocketDeviceCopies {
 public:
  // `runtime` may be null (no GPU runtime: GPU memory is refused).
  explicit SocketDeviceCopies(std::shared_ptr<gpu::GpuRuntime> runtime);
  ~SocketDeviceCopies();

  // Empty when GPU memory can be moved; the reason otherwise.
  const std::string& whyNot() const { return whyNot_; }

  // Copies `host` to `device` memory of GPU `ordinal`, or the reverse, and waits. The Status
  // names the copy, the device and the reason.
  Status toDevice(void* device, int ordinal, std::span<const std::uint8_t> host);
  Status fromDevice(std::span<std::uint8_t> host, const void* device, int ordinal);

 private:
  Status copy(const gpu::CopyRequest& request, int ordinal);

  std::shared_ptr<gpu::GpuRuntime> runtime_;
  std::string whyNot_;
  std::map<int, std::unique_ptr<gpu::CopyEngine>> engines_;  // by device
};

}  // namespace kvx::engine::socket
