#pragma once

// DeviceAllocation: device memory from the process's GpuRuntime, freed when the owner goes,
// with blocking copies in and out of it for code outside any transfer (benchmark buffers,
// reference copies). The copies go through a copy engine of the allocation's device made on
// first use, so the CPU never dereferences the device pointer.
//
// Thread safety: one owner thread; move-only.

#include <cstddef>
#include <memory>
#include <span>

#include "engine/gpu/copy_engine.h"
#include "kvx/result.h"

namespace kvx::engine::gpu {

class DeviceAllocation {
 public:
  // `bytes` of device memory on `device` (gpuRuntime().allocateDevice).
  static Result<DeviceAllocation> allocate(std::size_t bytes, int device);

  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  ~DeviceAllocation();

  void* get() const { return address_; }
  std::size_t bytes() const { return bytes_; }
  int device() const { return device_; }

  // Copies host bytes to [get() + offset, +bytes.size()), or the reverse, and waits for the
  // copy (TIMED_OUT after 60 s; the copy engine is then closed, which waits for it).
  // INVALID_ARGUMENT when the range exceeds the allocation.
  Status copyIn(std::size_t offset, std::span<const std::byte> bytes);
  Status copyOut(std::size_t offset, std::span<std::byte> out);

 private:
  DeviceAllocation(void* address, std::size_t bytes, int device)
      : address_(address), bytes_(bytes), device_(device) {}
  Status copy(CopyRequest request, std::size_t offset);
  void release();

  void* address_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
  std::unique_ptr<CopyEngine> engine_;  // made by the first copy
};

}  // namespace kvx::engine::gpu
