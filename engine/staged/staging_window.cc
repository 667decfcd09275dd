#include "engine/staged/staging_window.h"

namespace kvx::engine {

Result<std::unique_ptr<StagingWindow>> StagingWindow::create(Transport& transport,
                                                             gpu::GpuRuntime& gpu,
                                                             std::uint32_t slots,
                                                             std::uint64_t slotBytes) {
  if (slots == 0 || slotBytes == 0) {
    return invalidArgument("a staging window needs slots (" + std::to_string(slots) +
                           ") and bytes per slot (" + std::to_string(slotBytes) + ")");
  }
  std::unique_ptr<StagingWindow> window(new StagingWindow(slots, slotBytes));
  Status first = window->allocateFromTransport(transport, gpu);
  if (first.isOk()) {
    window->layout_ = window->pinnedBy_ != nullptr ? "allocated by the transport, pinned"
                                                   : "allocated and pinned by the transport";
    return window;
  }
  KVX_RETURN_IF_ERROR(window->allocatePinned(transport, gpu)
                          .withContext("making the staging window (" + std::to_string(slots) +
                                       " x " + std::to_string(slotBytes) + " bytes)"));
  window->layout_ = "pinned memory registered with the transport (" + first.toString() + ")";
  return window;
}

StagingWindow::StagingWindow(std::uint32_t slots, std::uint64_t slotBytes)
    : slotBytes_(slotBytes), leases_(slots) {}

Status StagingWindow::allocateFromTransport(Transport& transport, gpu::GpuRuntime& gpu) {
  const std::uint64_t bytes = slotBytes_ * leases_.size();
  auto memory = transport.allocateMemory(bytes, MemoryKind::kHost, -1);
  if (!memory.isOk()) return memory.status().withContext("the transport's memory");
  auto pinning = gpu.pinHost((*memory)->address(), static_cast<std::size_t>(bytes));
  if (!pinning.isOk()) return pinning.status().withContext("pinning the transport's memory");
  registration_ = std::move(memory).value();
  base_ = static_cast<std::byte*>(registration_->address());
  if (*pinning == gpu::HostPinning::kPinned) pinnedBy_ = &gpu;
  return Status::ok();
}

Status StagingWindow::allocatePinned(Transport& transport, gpu::GpuRuntime& gpu) {
  const std::uint64_t bytes = slotBytes_ * leases_.size();
  KVX_ASSIGN_OR_RETURN(std::shared_ptr<gpu::StagingAllocator> allocator, gpu.pinnedAllocator());
  KVX_ASSIGN_OR_RETURN(void* base, allocator->allocate(static_cast<std::size_t>(bytes)));
  // Host memory to the transport: peers put and get it, this side's copy engine fills it.
  auto registration = transport.registerMemory(base, bytes, MemoryKind::kHost, -1);
  if (!registration.isOk()) {
    allocator->release(base);
    return registration.status().withContext("registering pinned memory");
  }
  registration_ = std::move(registration).value();
  base_ = static_cast<std::byte*>(base);
  allocator_ = std::move(allocator);
  return Status::ok();
}

StagingWindow::~StagingWindow() {
  if (pinnedBy_ != nullptr) pinnedBy_->unpinHost(base_);
  registration_.reset();  // deregisters (first layout: and frees) before the memory goes
  if (allocator_ != nullptr) allocator_->release(base_);
}

StagingWindowMetadata StagingWindow::metadata() const {
  StagingWindowMetadata out;
  out.address = reinterpret_cast<std::uintptr_t>(base_);
  out.slotBytes = slotBytes_;
  out.slots = slots();
  const auto key = registration_->packedRemoteKey();
  out.packedKey.assign(key.begin(), key.end());
  return out;
}

std::optional<std::uint32_t> StagingWindow::lend(Lease lease) {
  for (std::uint32_t i = 0; i < leases_.size(); ++i) {
    if (!leases_[i]) {
      leases_[i] = std::move(lease);
      return i;
    }
  }
  return std::nullopt;
}

StagingWindow::Lease* StagingWindow::held(std::uint32_t slot, const std::string& peer,
                                          std::uint64_t requestId) {
  if (slot >= leases_.size() || !leases_[slot]) return nullptr;
  Lease& lease = *leases_[slot];
  if (lease.peer != peer || lease.requestId != requestId) return nullptr;
  return &lease;
}

StagingWindow::Lease* StagingWindow::at(std::uint32_t slot) {
  if (slot >= leases_.size() || !leases_[slot]) return nullptr;
  return &*leases_[slot];
}

void StagingWindow::giveBack(std::uint32_t slot) {
  if (slot < leases_.size()) leases_[slot].reset();
}

std::size_t StagingWindow::giveBackAllOf(const std::string& peer) {
  std::size_t given = 0;
  for (auto& lease : leases_) {
    if (lease && lease->peer == peer && !lease->copying) {
      lease.reset();
      ++given;
    }
  }
  return given;
}

std::size_t StagingWindow::lent() const {
  std::size_t n = 0;
  for (const auto& lease : leases_) n += lease ? 1 : 0;
  return n;
}

}  // namespace kvx::engine
