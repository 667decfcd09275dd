#include "engine/transport/socket/socket_device_copies.h"

#include <utility>

#include "engine/gpu/copy_ticket.h"

namespace kvx::engine::socket {

SocketDeviceCopies::SocketDeviceCopies(std::shared_ptr<gpu::GpuRuntime> runtime)
    : runtime_(std::move(runtime)) {
  if (runtime_ == nullptr) {
    whyNot_ =
        "the socket transport reads and writes with the CPU and reaches GPU memory only "
        "through a GPU runtime's copy engine, and it was given no GPU runtime";
    return;
  }
  const Result<int> devices = runtime_->deviceCount();
  if (!devices.isOk()) {
    whyNot_ = "the socket transport moves GPU memory through a copy engine, and the GPU runtime (" +
              runtime_->describe() + ") has no device: " + devices.status().message();
  } else if (*devices <= 0) {
    whyNot_ = "the socket transport moves GPU memory through a copy engine, and the GPU runtime (" +
              runtime_->describe() + ") has no device";
  }
}

SocketDeviceCopies::~SocketDeviceCopies() {
  for (auto& [ordinal, engine] : engines_) engine->close();
}

Status SocketDeviceCopies::toDevice(void* device, int ordinal, std::span<const std::uint8_t> host) {
  gpu::CopyRequest request;
  request.kind = gpu::CopyKind::kHostToDevice;
  request.destination = device;
  request.source = host.data();
  request.length = host.size();
  return copy(request, ordinal);
}

Status SocketDeviceCopies::fromDevice(std::span<std::uint8_t> host, const void* device,
                                      int ordinal) {
  gpu::CopyRequest request;
  request.kind = gpu::CopyKind::kDeviceToHost;
  request.destination = host.data();
  request.source = device;
  request.length = host.size();
  return copy(request, ordinal);
}

Status SocketDeviceCopies::copy(const gpu::CopyRequest& request, int ordinal) {
  const std::string what =
      "socket transport: " + gpu::describe(request) + " on GPU " + std::to_string(ordinal);
  if (!whyNot_.empty()) return failedPrecondition(what + ": " + whyNot_);
  auto found = engines_.find(ordinal);
  if (found == engines_.end()) {
    gpu::CopyEngineOptions options;
    options.device = ordinal;
    Result<std::unique_ptr<gpu::CopyEngine>> made = runtime_->createCopyEngine(options);
    if (!made.isOk()) return made.status().withContext(what);
    found = engines_.emplace(ordinal, std::move(made).value()).first;
  }
  const Status status = gpu::CopyTicket::start(*found->second, request)
                            ->wait(std::chrono::steady_clock::now() + kCopyDeadline);
  if (status.code() == StatusCode::kTimedOut) {
    // The copy still holds the host buffer: closing the engine waits for it.
    found->second->close();
    engines_.erase(found);
  }
  return status.isOk() ? status : status.withContext(what);
}

}  // namespace kvx::engine::socket
