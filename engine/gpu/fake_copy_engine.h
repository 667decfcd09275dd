#pragma once

// FakeCopyEngine: a CUDA-free CopyEngine for tests. "Device" memory is host memory; each copy
// is a memcpy on one worker thread (copies run one at a time, in submission order, like one
// DMA engine), after a configurable delay and at a configurable bandwidth. Failures are
// injected per copy, and an observer sees each copy start and end, so tests can check the
// order of events rather than timings.
//
// Thread safety and guarantees: those of CopyEngine. The observer and the callbacks run on
// the worker thread (a refused copy's callback on the caller's). Owned by the test.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <thread>

#include "engine/gpu/copy_engine.h"
#include "sync/mutex.h"

namespace kvx::engine::gpu {

struct FakeCopyEvent {
  enum class Phase : std::uint8_t { kStart, kEnd };
  Phase phase = Phase::kStart;
  std::uint64_t sequence = 0;  // the copy's number, from 0 in submission order
  CopyRequest request;
  Status status;  // kEnd: the outcome about to be reported
};

struct FakeCopyOptions {
  std::chrono::microseconds perCopyDelay{0};  // every copy takes at least this long
  double bytesPerSecond = 0;                  // plus length / bandwidth; 0: unlimited
  // Called on the worker thread when a copy starts and ends (before its callback).
  std::function<void(const FakeCopyEvent&)> observer;
};

class FakeCopyEngine final : public CopyEngine {
 public:
  explicit FakeCopyEngine(FakeCopyOptions options = {});
  ~FakeCopyEngine() override;

  FakeCopyEngine(const FakeCopyEngine&) = delete;
  FakeCopyEngine& operator=(const FakeCopyEngine&) = delete;

  void copy(const CopyRequest& request, CopyCallback done) override;
  void close() override;
  std::string describe() const override;

  // The copy numbered `sequence` fails with `status` after its delay, copying nothing.
  void failCopy(std::uint64_t sequence, Status status);
  // While paused, the worker starts no copy: they queue (for tests of cancel and close).
  void pause();
  void resume();

  std::uint64_t copiesSubmitted() const;
  std::uint64_t copiesSucceeded() const;
  std::uint64_t bytesCopied() const;

 private:
  struct Queued {
    std::uint64_t sequence;
    CopyRequest request;
    CopyCallback done;
  };

  void run();
  // Waits out the copy's delay; false if the engine closed meanwhile.
  bool waitOut(std::chrono::nanoseconds delay);

  const FakeCopyOptions options_;
  mutable sync::Mutex mutex_;
  std::condition_variable wake_;  // the worker: work, resume or close
  std::condition_variable idle_;  // close(): the running copy finished
  std::deque<Queued> queue_ KVX_GUARDED_BY(mutex_);
  std::map<std::uint64_t, Status> faults_ KVX_GUARDED_BY(mutex_);
  std::uint64_t submitted_ KVX_GUARDED_BY(mutex_) = 0;
  std::uint64_t succeeded_ KVX_GUARDED_BY(mutex_) = 0;
  std::uint64_t bytes_ KVX_GUARDED_BY(mutex_) = 0;
  bool running_ KVX_GUARDED_BY(mutex_) = false;  // a copy is between pop and callback
  bool paused_ KVX_GUARDED_BY(mutex_) = false;
  bool closed_ KVX_GUARDED_BY(mutex_) = false;
  std::thread worker_;
};

}  // namespace kvx::engine::gpu
