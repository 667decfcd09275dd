#include "engine/gpu/device_allocation.h"

#include <chrono>
#include <string>
#include <utility>

#include "engine/gpu/copy_ticket.h"
#include "engine/gpu/gpu_runtime.h"

namespace kvx::engine::gpu {

Result<DeviceAllocation> DeviceAllocation::allocate(std::size_t bytes, int device) {
  KVX_ASSIGN_OR_RETURN(void* address, gpuRuntime().allocateDevice(bytes, device));
  return DeviceAllocation(address, bytes, device);
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : address_(std::exchange(other.address_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(other.device_),
      engine_(std::move(other.engine_)) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  if (this != &other) {
    release();
    address_ = std::exchange(other.address_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = other.device_;
    engine_ = std::move(other.engine_);
  }
  return *this;
}

DeviceAllocation::~DeviceAllocation() { release(); }

void DeviceAllocation::release() {
  engine_.reset();  // closes it: no copy runs once the memory is freed
  if (address_ != nullptr) gpuRuntime().freeDevice(address_).ignore();
  address_ = nullptr;
}

Status DeviceAllocation::copyIn(std::size_t offset, std::span<const std::byte> bytes) {
  CopyRequest request;
  request.kind = CopyKind::kHostToDevice;
  request.source = bytes.data();
  request.length = bytes.size();
  return copy(request, offset);
}

Status DeviceAllocation::copyOut(std::size_t offset, std::span<std::byte> out) {
  CopyRequest request;
  request.kind = CopyKind::kDeviceToHost;
  request.destination = out.data();
  request.length = out.size();
  return copy(request, offset);
}

Status DeviceAllocation::copy(CopyRequest request, std::size_t offset) {
  if (offset > bytes_ || request.length > bytes_ - offset) {
    return invalidArgument("copy of " + std::to_string(request.length) + " bytes at offset " +
                           std::to_string(offset) + " exceeds the " + std::to_string(bytes_) +
                           "-byte device allocation on device " + std::to_string(device_));
  }
  if (engine_ == nullptr) {
    CopyEngineOptions options;
    options.device = device_;
    KVX_ASSIGN_OR_RETURN(engine_, gpuRuntime().createCopyEngine(options));
  }
  void* at = static_cast<std::byte*>(address_) + offset;
  if (request.kind == CopyKind::kHostToDevice) {
    request.destination = at;
  } else {
    request.source = at;
  }
  const Status status = CopyTicket::start(*engine_, request)
                            ->wait(std::chrono::steady_clock::now() + std::chrono::seconds(60));
  // A copy still running holds the caller's host range: close the engine, which waits for it.
  if (status.code() == StatusCode::kTimedOut) engine_.reset();
  return status;
}

}  // namespace kvx::engine::gpu
