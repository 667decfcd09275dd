#include "engine/memory/region_copy.h"

#include <condition_variable>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/memory/address_range.h"
#include "sync/mutex.h"

namespace kvx::engine {
namespace {

// The copy-engine copies of one batch, shared by the waiting caller and the completions:
// whichever is last frees it, so a copy that outlives the deadline still has its buffer.
struct PendingBatch {
  sync::Mutex mutex;
  std::condition_variable finished;
  std::size_t running KVX_GUARDED_BY(mutex) = 0;
  Status status KVX_GUARDED_BY(mutex);  // the first error
  std::vector<std::byte> buffer;
};

std::string describeCopy(bool into, std::size_t length, std::uint64_t offset,
                         const RegionInfo& info) {
  return std::string(into ? "copying " : "reading ") + std::to_string(length) + " bytes " +
         (into ? "into" : "out of") + " region '" + info.name + "' at offset " +
         std::to_string(offset);
}

struct ResolvedPiece {
  std::shared_ptr<LocalRegion> region;
  std::size_t bufferOffset = 0;  // where its bytes sit in the batch buffer (CUDA pieces)
};

}  // namespace

Status copyRegionPieces(MemoryRegistry& registry, const CopyEngineOf& engineOf,
                        std::span<const RegionPiece> pieces, bool into, Deadline deadline) {
  // Everything is checked before anything is copied.
  std::vector<ResolvedPiece> resolved(pieces.size());
  std::size_t deviceBytes = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const RegionPiece& p = pieces[i];
    auto region = registry.find(p.region);
    if (!region.isOk()) return region.status().withContext("piece " + std::to_string(i));
    const RegionInfo& info = (*region)->info;
    if (!rangeFits(info.length, p.offset, p.length)) {
      return invalidArgument(
          "piece " + std::to_string(i) + ": " + describeCopy(into, p.length, p.offset, info) +
          ": the range exceeds the region (length " + std::to_string(info.length) + ")");
    }
    resolved[i].region = std::move(region).value();
    if (info.kind != MemoryKind::kHost) {
      resolved[i].bufferOffset = deviceBytes;
      deviceBytes += p.length;
    }
  }
  auto batch = std::make_shared<PendingBatch>();
  batch->buffer.resize(deviceBytes);
  Status submitError;
  for (std::size_t i = 0; i < pieces.size() && submitError.isOk(); ++i) {
    const RegionPiece& p = pieces[i];
    const std::shared_ptr<LocalRegion>& region = resolved[i].region;
    const RegionInfo& info = region->info;
    const std::shared_ptr<LocalRegion> pinned[] = {region};
    submitError = registry.pin(pinned);
    if (!submitError.isOk()) break;
    std::byte* at = reinterpret_cast<std::byte*>(region->base()) + p.offset;
    if (info.kind == MemoryKind::kHost) {
      if (into) {
        std::memcpy(at, p.host, p.length);
      } else {
        std::memcpy(p.host, at, p.length);
      }
      registry.unpin(pinned);
      continue;
    }
    auto engine = engineOf(info.device);
    if (!engine.isOk()) {
      registry.unpin(pinned);
      submitError = engine.status().withContext(describeCopy(into, p.length, p.offset, info));
      break;
    }
    std::byte* staged = batch->buffer.data() + resolved[i].bufferOffset;
    if (into) std::memcpy(staged, p.host, p.length);
    gpu::CopyRequest request;
    request.length = p.length;
    request.kind = into ? gpu::CopyKind::kHostToDevice : gpu::CopyKind::kDeviceToHost;
    request.destination = into ? static_cast<void*>(at) : staged;
    request.source = into ? static_cast<const void*>(staged) : at;
    {
      sync::MutexLock lock(batch->mutex);
      ++batch->running;
    }
    std::string what = describeCopy(into, p.length, p.offset, info);
    (*engine)->copy(request, [batch, region, &registry, what = std::move(what)](Status status) {
      const std::shared_ptr<LocalRegion> done[] = {region};
      registry.unpin(done);
      sync::MutexLock lock(batch->mutex);
      if (!status.isOk() && batch->status.isOk()) batch->status = status.withContext(what);
      if (--batch->running == 0) batch->finished.notify_all();
    });
  }
  sync::UniqueLock lock(batch->mutex);
  if (!batch->finished.wait_until(lock.native(), deadline, [&]() KVX_REQUIRES(batch->mutex) {
        return batch->running == 0;
      })) {
    return timedOut(std::to_string(batch->running) + " of " + std::to_string(pieces.size()) +
                    " region copies were not done by the deadline (they may still land)");
  }
  if (!submitError.isOk()) return submitError;
  if (!batch->status.isOk()) return batch->status;
  lock.unlock();
  if (!into) {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (resolved[i].region->info.kind == MemoryKind::kHost) continue;
      std::memcpy(pieces[i].host, batch->buffer.data() + resolved[i].bufferOffset,
                  pieces[i].length);
    }
  }
  return Status::ok();
}

Status copyIntoRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<const std::byte> bytes, Deadline deadline) {
  // The host bytes are only read on this path.
  const RegionPiece piece{id, offset, const_cast<std::byte*>(bytes.data()), bytes.size()};
  return copyRegionPieces(registry, engineOf, {&piece, 1}, true, deadline);
}

Status copyFromRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<std::byte> out, Deadline deadline) {
  const RegionPiece piece{id, offset, out.data(), out.size()};
  return copyRegionPieces(registry, engineOf, {&piece, 1}, false, deadline);
}

}  // namespace kvx::engine
