#pragma once

// CudaCopyEngine: the CopyEngine over the CUDA runtime. Each copy is a cudaMemcpyAsync on one
// of a few non-blocking streams of one device (round-robin), followed by an event; a poller
// thread queries the events of copies in flight (cudaEventQuery, every 20 us while any is
// pending, asleep otherwise) and fires the callbacks. Callbacks never run on a CUDA driver
// thread, so they may submit more copies.
//
// close(): copies already on a stream cannot be recalled; close() waits for them up to
// `closeTimeout` (they report their real outcome) and fails those still running after it
// with TIMED_OUT (their buffers must then stay valid until the device is done).
//
// Thread safety and guarantees: those of CopyEngine. copy() leaves the calling thread's
// current device as it found it. Compiled only with CUDA; created by createCopyEngine().

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "engine/gpu/copy_engine.h"
#include "kvx/result.h"
#include "sync/mutex.h"

namespace kvx::engine::gpu::cuda {

class CudaCopyEngine final : public CopyEngine {
 public:
  static Result<std::unique_ptr<CopyEngine>> create(const CopyEngineOptions& options);
  ~CudaCopyEngine() override;

  CudaCopyEngine(const CudaCopyEngine&) = delete;
  CudaCopyEngine& operator=(const CudaCopyEngine&) = delete;

  void copy(const CopyRequest& request, CopyCallback done) override;
  void close() override;
  std::string describe() const override;

 private:
  struct InFlight {
    cudaEvent_t event = nullptr;
    CopyRequest request;
    CopyCallback done;
  };

  CudaCopyEngine(const CopyEngineOptions& options, std::string deviceName);
  Status submit(const CopyRequest& request, cudaEvent_t& event) KVX_REQUIRES(mutex_);
  void poll();

  const CopyEngineOptions options_;
  const std::string deviceName_;
  std::vector<cudaStream_t> streams_;  // created by create(), destroyed by the destructor

  sync::Mutex mutex_;
  std::condition_variable wake_;     // the poller: new copies, close, stop
  std::condition_variable drained_;  // close(): nothing left in flight
  // Not yet taken by the poller.
  std::deque<InFlight> submitted_ KVX_GUARDED_BY(mutex_);
  std::vector<cudaEvent_t> spareEvents_ KVX_GUARDED_BY(mutex_);
  std::size_t inFlight_ KVX_GUARDED_BY(mutex_) = 0;  // submitted, not yet reported
  std::size_t nextStream_ KVX_GUARDED_BY(mutex_) = 0;
  bool closed_ KVX_GUARDED_BY(mutex_) = false;
  std::chrono::steady_clock::time_point closeDeadline_ KVX_GUARDED_BY(mutex_);
  bool stopping_ KVX_GUARDED_BY(mutex_) = false;
  std::thread poller_;
};

}  // namespace kvx::engine::gpu::cuda
