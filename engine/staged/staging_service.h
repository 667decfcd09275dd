#pragma once

// StagingService: what one engine needs to stage GPU memory through host buffers on its own
// side: a copy engine per device, created at first use, and sets of staging buffers
// registered with the transport as host memory, each lent to one transfer start at a time
// (a StagedPipeline holds its buffers for its whole move). Sets are made on demand and kept
// for reuse, so their number follows the peak of concurrent staged transfers.
//
// Thread safety: every member may be called from any thread. Lifetime: owned by the engine;
// REQUIRES: the transport and the GPU runtime outlive it, and every lease is returned first.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "engine/gpu/copy_engine.h"
#include "engine/gpu/gpu_runtime.h"
#include "engine/gpu/staging_pool.h"
#include "engine/transport/transport.h"
#include "sync/mutex.h"

namespace kvx::engine {

struct StagingOptions {
  std::size_t chunkBytes = 2u << 20;  // one staging buffer; the unit of copy and wire op
  std::size_t buffers = 4;            // per set: chunks in flight per staged transfer
  // The staging window peers stage through to reach this agent's GPU memory that its
  // transport cannot register (made with the first such exposed region): `windowSlots`
  // buffers of `windowSlotBytes` (0: chunkBytes), shared by all peers.
  std::uint32_t windowSlots = 8;
  std::size_t windowSlotBytes = 0;
  // How long an initiator waits for each reply of the peer's window before failing the
  // transfer (TIMED_OUT).
  std::chrono::milliseconds replyTimeout{5000};
};

// One set of staging buffers and their transport registrations (one per buffer).
struct StagingLease {
  std::shared_ptr<gpu::StagingPool> pool;
  std::vector<std::unique_ptr<TransportMemory>> registrations;

  // The registration of the buffer that starts at `buffer`; null for any other address.
  const TransportMemory* registrationOf(const std::byte* buffer) const;
};

class StagingService {
 public:
  StagingService(Transport& transport, gpu::GpuRuntime& gpu, StagingOptions options);
  ~StagingService();

  StagingService(const StagingService&) = delete;
  StagingService& operator=(const StagingService&) = delete;

  // Readies `device` for staged transfers (its copy engine and one set of buffers), so that
  // the first post allocates nothing. Called when a transfer with staged operations is made;
  // the runtime's reason when it cannot ("no CUDA device visible (...)").
  Status prepare(int device);
  // The copy engine of `device`, created at first use; valid as long as the service.
  Result<gpu::CopyEngine*> copyEngine(int device);

  // A free set of buffers, made now if none is free.
  Result<std::unique_ptr<StagingLease>> acquire();
  void release(std::unique_ptr<StagingLease> lease);

  // Closes the copy engines: waits for the copies they run, so that no copy callback runs
  // after close() returns. Idempotent; later copies are refused.
  void close();

 private:
  Result<std::unique_ptr<StagingLease>> makeLease();

  Transport& transport_;
  gpu::GpuRuntime& gpu_;
  const StagingOptions options_;

  sync::Mutex mutex_;  // leaf lock: never held while calling the runtime or the transport
  std::map<int, std::unique_ptr<gpu::CopyEngine>> engines_ KVX_GUARDED_BY(mutex_);
  std::vector<std::unique_ptr<StagingLease>> idle_ KVX_GUARDED_BY(mutex_);
  std::shared_ptr<gpu::StagingAllocator> allocator_ KVX_GUARDED_BY(mutex_);
  std::size_t leases_ KVX_GUARDED_BY(mutex_) = 0;  // made
};

}  // namespace kvx::engine
