#include "engine/gpu/fake_copy_engine.h"

#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "engine/gpu/gpu_runtime.h"

namespace kvx::engine::gpu {
namespace {

// CPU time of every fake copy engine's memcpys in this process (emulatedCopyCpu()).
std::atomic<std::int64_t> emulatedCopyNs{0};

std::int64_t threadCpuNs() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

std::chrono::nanoseconds emulatedCopyCpu() {
  return std::chrono::nanoseconds(emulatedCopyNs.load(std::memory_order_relaxed));
}

FakeCopyEngine::FakeCopyEngine(FakeCopyOptions options) : options_(std::move(options)) {
  worker_ = std::thread([this] { run(); });
}

FakeCopyEngine::~FakeCopyEngine() {
  close();
  worker_.join();
}

void FakeCopyEngine::copy(const CopyRequest& request, CopyCallback done) {
  Status refused = checkCopyRequest(request);
  if (refused.isOk() && request.length == 0) {
    done(Status::ok());
    return;
  }
  {
    sync::MutexLock lock(mutex_);
    if (refused.isOk() && closed_) {
      refused =
          cancelled("copy (" + gpu::describe(request) + ") refused: the copy engine is closed");
    }
    if (refused.isOk()) {
      queue_.push_back(Queued{submitted_++, request, std::move(done)});
    }
  }
  if (!refused.isOk()) {
    done(std::move(refused));
    return;
  }
  wake_.notify_all();
}

void FakeCopyEngine::close() {
  std::deque<Queued> dropped;
  {
    sync::MutexLock lock(mutex_);
    closed_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_all();
  for (Queued& q : dropped) {
    q.done(cancelled("copy (" + gpu::describe(q.request) +
                     ") not started: the copy engine was closed"));
  }
  // The worker may be the caller (close from a callback): it cannot wait for itself.
  if (std::this_thread::get_id() == worker_.get_id()) return;
  sync::UniqueLock lock(mutex_);
  idle_.wait(lock.native(), [&]() KVX_REQUIRES(mutex_) { return !running_; });
}

std::string FakeCopyEngine::describe() const {
  char text[128];
  if (options_.bytesPerSecond > 0) {
    std::snprintf(text, sizeof text, "fake copy engine (%lld us per copy, %.3g GB/s)",
                  static_cast<long long>(options_.perCopyDelay.count()),
                  options_.bytesPerSecond / 1e9);
  } else {
    std::snprintf(text, sizeof text, "fake copy engine (%lld us per copy, unlimited bandwidth)",
                  static_cast<long long>(options_.perCopyDelay.count()));
  }
  return text;
}

void FakeCopyEngine::failCopy(std::uint64_t sequence, Status status) {
  sync::MutexLock lock(mutex_);
  faults_[sequence] = std::move(status);
}

void FakeCopyEngine::pause() {
  sync::MutexLock lock(mutex_);
  paused_ = true;
}

void FakeCopyEngine::resume() {
  {
    sync::MutexLock lock(mutex_);
    paused_ = false;
  }
  wake_.notify_all();
}

std::uint64_t FakeCopyEngine::copiesSubmitted() const {
  sync::MutexLock lock(mutex_);
  return submitted_;
}

std::uint64_t FakeCopyEngine::copiesSucceeded() const {
  sync::MutexLock lock(mutex_);
  return succeeded_;
}

std::uint64_t FakeCopyEngine::bytesCopied() const {
  sync::MutexLock lock(mutex_);
  return bytes_;
}

void FakeCopyEngine::run() {
  for (;;) {
    Queued q;
    Status fault;
    {
      sync::UniqueLock lock(mutex_);
      wake_.wait(lock.native(),
                 [&]() KVX_REQUIRES(mutex_) { return closed_ || (!paused_ && !queue_.empty()); });
      if (queue_.empty() || paused_) {
        if (closed_) return;
        continue;
      }
      q = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
      if (auto it = faults_.find(q.sequence); it != faults_.end()) fault = it->second;
    }
    if (options_.observer)
      options_.observer({FakeCopyEvent::Phase::kStart, q.sequence, q.request, {}});
    std::chrono::nanoseconds delay = options_.perCopyDelay;
    if (options_.bytesPerSecond > 0) {
      delay += std::chrono::nanoseconds(static_cast<std::int64_t>(
          static_cast<double>(q.request.length) * 1e9 / options_.bytesPerSecond));
    }
    Status status = fault;
    if (!waitOut(delay)) {
      status = cancelled("copy (" + gpu::describe(q.request) +
                         ") stopped: the copy engine was closed while it ran");
    } else if (status.isOk()) {
      const std::int64_t before = threadCpuNs();
      std::memcpy(q.request.destination, q.request.source, q.request.length);
      emulatedCopyNs.fetch_add(threadCpuNs() - before, std::memory_order_relaxed);
    }
    if (options_.observer) {
      options_.observer({FakeCopyEvent::Phase::kEnd, q.sequence, q.request, status});
    }
    if (status.isOk()) {
      sync::MutexLock lock(mutex_);
      ++succeeded_;
      bytes_ += q.request.length;
    }
    q.done(std::move(status));
    {
      sync::MutexLock lock(mutex_);
      running_ = false;
    }
    idle_.notify_all();
  }
}

bool FakeCopyEngine::waitOut(std::chrono::nanoseconds delay) {
  sync::UniqueLock lock(mutex_);
  if (delay.count() <= 0) return !closed_;
  const auto until = std::chrono::steady_clock::now() + delay;
  return !wake_.wait_until(lock.native(), until, [&]() KVX_REQUIRES(mutex_) { return closed_; });
}

}  // namespace kvx::engine::gpu
