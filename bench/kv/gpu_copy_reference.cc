#include "bench/kv/gpu_copy_reference.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "engine/gpu/copy_ticket.h"
#include "engine/gpu/device_allocation.h"
#include "engine/gpu/gpu_runtime.h"
#include "engine/gpu/staging_pool.h"

namespace kvx::bench {
namespace {

using Clock = std::chrono::steady_clock;
using engine::gpu::CopyKind;
using engine::gpu::CopyRequest;
using engine::gpu::CopyTicket;
using engine::gpu::DeviceAllocation;

// GB/s of `copies` copies of `request`, after one untimed.
Result<double> timeCopies(engine::gpu::CopyEngine& engine, const CopyRequest& request, int copies) {
  const auto copyOnce = [&] {
    return CopyTicket::start(engine, request)->wait(Clock::now() + std::chrono::seconds(30));
  };
  KVX_RETURN_IF_ERROR(copyOnce());
  const auto start = Clock::now();
  for (int i = 0; i < copies; ++i) KVX_RETURN_IF_ERROR(copyOnce());
  const double elapsedS = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(request.length) * copies / elapsedS / 1e9;
}

}  // namespace

Result<GpuCopyReference> measureGpuCopyReference(int device, std::size_t bytes, int copies) {
  engine::gpu::GpuRuntime& runtime = engine::gpu::gpuRuntime();
  engine::gpu::CopyEngineOptions options;
  options.device = device;
  KVX_ASSIGN_OR_RETURN(auto engine, runtime.createCopyEngine(options));
  KVX_ASSIGN_OR_RETURN(auto pinned, runtime.pinnedAllocator());
  KVX_ASSIGN_OR_RETURN(auto host, engine::gpu::StagingPool::create(pinned, 1, bytes));
  KVX_ASSIGN_OR_RETURN(DeviceAllocation a, DeviceAllocation::allocate(bytes, device));
  KVX_ASSIGN_OR_RETURN(DeviceAllocation b, DeviceAllocation::allocate(bytes, device));

  GpuCopyReference reference;
  reference.bytes = bytes;
  reference.copies = copies;
  reference.engine = engine->describe();
  KVX_ASSIGN_OR_RETURN(
      reference.hostToDevice,
      timeCopies(*engine, {a.get(), host->buffer(0), bytes, CopyKind::kHostToDevice}, copies));
  KVX_ASSIGN_OR_RETURN(
      reference.deviceToDevice,
      timeCopies(*engine, {b.get(), a.get(), bytes, CopyKind::kDeviceToDevice}, copies));
  KVX_ASSIGN_OR_RETURN(
      reference.deviceToHost,
      timeCopies(*engine, {host->buffer(0), b.get(), bytes, CopyKind::kDeviceToHost}, copies));
  engine->close();
  return reference;
}

std::string describeGpuCopyReference(const GpuCopyReference& r) {
  return fmt::format(
      "GPU copy reference ({}, {} MiB copies): device->device {:.1f} GB/s, host->device {:.1f} "
      "GB/s, device->host {:.1f} GB/s",
      r.engine, r.bytes >> 20, r.deviceToDevice, r.hostToDevice, r.deviceToHost);
}

}  // namespace kvx::bench
