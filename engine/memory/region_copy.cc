#include "engine/memory/region_copy.h"

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kvx::engine {
namespace {

// One copy engine copy, shared by the waiting caller and the completion: whichever is last
// frees it, so a copy that outlives the deadline still has its buffer and its pin.
struct PendingCopy {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;  // GUARDED_BY(mutex)
  Status status;      // GUARDED_BY(mutex)
  std::vector<std::byte> buffer;
};

std::string describeCopy(bool into, std::size_t length, std::uint64_t offset,
                         const RegionInfo& info) {
  return std::string(into ? "copying " : "reading ") + std::to_string(length) + " bytes " +
         (into ? "into" : "out of") + " region '" + info.name + "' at offset " +
         std::to_string(offset);
}

// Copies into the region from `source`, or, when `source` is null, out of it into
// `destination`. The caller's memory is read before the copy starts or written after it is
// done, never while the copy engine may still run.
Status copyRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                  std::uint64_t offset, std::size_t length, const std::byte* source,
                  std::byte* destination, Deadline deadline) {
  const bool into = source != nullptr;
  KVX_ASSIGN_OR_RETURN(std::shared_ptr<LocalRegion> region, registry.find(id));
  const RegionInfo& info = region->info;
  if (!rangeFits(info.length, offset, length)) {
    return invalidArgument(describeCopy(into, length, offset, info) +
                           ": the range exceeds the region (length " + std::to_string(info.length) +
                           ")");
  }
  const std::shared_ptr<LocalRegion> pinned[] = {region};
  KVX_RETURN_IF_ERROR(registry.pin(pinned));
  std::byte* at = reinterpret_cast<std::byte*>(region->base()) + offset;
  if (info.kind == MemoryKind::kHost) {
    if (into) {
      std::memcpy(at, source, length);
    } else {
      std::memcpy(destination, at, length);
    }
    registry.unpin(pinned);
    return Status::ok();
  }
  auto engine = engineOf(info.device);
  if (!engine.isOk()) {
    registry.unpin(pinned);
    return engine.status().withContext(describeCopy(into, length, offset, info));
  }
  auto copy = std::make_shared<PendingCopy>();
  copy->buffer.resize(length);
  if (into) std::memcpy(copy->buffer.data(), source, length);
  gpu::CopyRequest request;
  request.length = length;
  request.kind = into ? gpu::CopyKind::kHostToDevice : gpu::CopyKind::kDeviceToHost;
  request.destination = into ? static_cast<void*>(at) : copy->buffer.data();
  request.source = into ? static_cast<const void*>(copy->buffer.data()) : at;
  (*engine)->copy(request, [copy, region, &registry](Status status) {
    const std::shared_ptr<LocalRegion> done[] = {region};
    registry.unpin(done);
    std::lock_guard lock(copy->mutex);
    copy->done = true;
    copy->status = std::move(status);
    copy->finished.notify_all();
  });
  std::unique_lock lock(copy->mutex);
  if (!copy->finished.wait_until(lock, deadline, [&] { return copy->done; })) {
    return timedOut(describeCopy(into, length, offset, info) +
                    ": the copy was not done by the deadline (it may still land)");
  }
  if (!copy->status.isOk())
    return copy->status.withContext(describeCopy(into, length, offset, info));
  if (!into) std::memcpy(destination, copy->buffer.data(), length);
  return Status::ok();
}

}  // namespace

Status copyIntoRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<const std::byte> bytes, Deadline deadline) {
  return copyRegion(registry, engineOf, id, offset, bytes.size(), bytes.data(), nullptr, deadline);
}

Status copyFromRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<std::byte> out, Deadline deadline) {
  return copyRegion(registry, engineOf, id, offset, out.size(), nullptr, out.data(), deadline);
}

}  // namespace kvx::engine
