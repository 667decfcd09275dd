#include "engine/gpu/cuda/cuda_copy_engine.h"

#include "engine/gpu/cuda/cuda_status.h"
#include "engine/gpu/cuda/device_guard.h"

namespace kvx::engine::gpu::cuda {

namespace {

constexpr std::chrono::microseconds kPollInterval{20};

cudaMemcpyKind memcpyKind(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return cudaMemcpyHostToDevice;
    case CopyKind::kDeviceToHost: return cudaMemcpyDeviceToHost;
    case CopyKind::kDeviceToDevice: return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

}  // namespace

Result<std::unique_ptr<CopyEngine>> CudaCopyEngine::create(const CopyEngineOptions& options) {
  DeviceGuard guard(options.device);
  KVX_RETURN_IF_ERROR(guard.status());
  cudaDeviceProp properties{};
  KVX_RETURN_IF_ERROR(
      cudaStatus(cudaGetDeviceProperties(&properties, options.device), "cudaGetDeviceProperties"));
  std::unique_ptr<CudaCopyEngine> engine(new CudaCopyEngine(options, properties.name));
  for (std::size_t i = 0; i < options.streams; ++i) {
    cudaStream_t stream = nullptr;
    KVX_RETURN_IF_ERROR(cudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                   "cudaStreamCreateWithFlags"));
    engine->streams_.push_back(stream);
  }
  engine->poller_ = std::thread([raw = engine.get()] { raw->poll(); });
  return std::unique_ptr<CopyEngine>(std::move(engine));
}

CudaCopyEngine::CudaCopyEngine(const CopyEngineOptions& options, std::string deviceName)
    : options_(options), deviceName_(std::move(deviceName)) {}

CudaCopyEngine::~CudaCopyEngine() {
  if (poller_.joinable()) {
    close();
    {
      sync::MutexLock lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    poller_.join();
  }
  DeviceGuard guard(options_.device);
  for (cudaEvent_t event : spareEvents_) cudaEventDestroy(event);
  // A stream with copies still running (close timed out) is released once they finish.
  for (cudaStream_t stream : streams_) cudaStreamDestroy(stream);
}

void CudaCopyEngine::copy(const CopyRequest& request, CopyCallback done) {
  Status refused = checkCopyRequest(request);
  if (refused.isOk() && request.length == 0) {
    done(Status::ok());
    return;
  }
  if (refused.isOk()) {
    sync::MutexLock lock(mutex_);
    cudaEvent_t event = nullptr;
    if (closed_) {
      refused =
          cancelled("copy (" + gpu::describe(request) + ") refused: the copy engine is closed");
    } else {
      refused = submit(request, event);
    }
    if (refused.isOk()) {
      submitted_.push_back(InFlight{event, request, std::move(done)});
      ++inFlight_;
    }
  }
  if (!refused.isOk()) {
    done(std::move(refused));
    return;
  }
  wake_.notify_all();
}

Status CudaCopyEngine::submit(const CopyRequest& request, cudaEvent_t& event) {
  DeviceGuard guard(options_.device);
  KVX_RETURN_IF_ERROR(guard.status());
  if (spareEvents_.empty()) {
    KVX_RETURN_IF_ERROR(cudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                   "cudaEventCreateWithFlags"));
  } else {
    event = spareEvents_.back();
    spareEvents_.pop_back();
  }
  cudaStream_t stream = streams_[nextStream_++ % streams_.size()];
  Status status = cudaStatus(cudaMemcpyAsync(request.destination, request.source, request.length,
                                             memcpyKind(request.kind), stream),
                             "cudaMemcpyAsync (" + gpu::describe(request) + ")");
  if (status.isOk()) status = cudaStatus(cudaEventRecord(event, stream), "cudaEventRecord");
  if (!status.isOk()) spareEvents_.push_back(event);
  return status;
}

void CudaCopyEngine::close() {
  sync::UniqueLock lock(mutex_);
  if (!closed_) {
    closed_ = true;
    closeDeadline_ = std::chrono::steady_clock::now() + options_.closeTimeout;
  }
  wake_.notify_all();
  if (poller_.get_id() == std::this_thread::get_id()) return;  // from a callback
  // The poller reports every copy by closeDeadline_; the margin covers the callbacks.
  drained_.wait_until(lock.native(), closeDeadline_ + std::chrono::seconds(1),
                      [&]() KVX_REQUIRES(mutex_) { return inFlight_ == 0; });
}

std::string CudaCopyEngine::describe() const {
  return "CUDA copy engine on device " + std::to_string(options_.device) + " (" + deviceName_ +
         ", " + std::to_string(streams_.size()) + " streams)";
}

void CudaCopyEngine::poll() {
  DeviceGuard guard(options_.device);
  std::vector<InFlight> mine;  // in flight, taken from submitted_
  for (;;) {
    bool pastDeadline = false;
    {
      sync::UniqueLock lock(mutex_);
      if (mine.empty()) {
        wake_.wait(lock.native(),
                   [&]() KVX_REQUIRES(mutex_) { return stopping_ || !submitted_.empty(); });
        if (stopping_ && submitted_.empty()) return;
      }
      for (InFlight& f : submitted_) mine.push_back(std::move(f));
      submitted_.clear();
      pastDeadline = closed_ && std::chrono::steady_clock::now() >= closeDeadline_;
    }
    std::vector<std::pair<CopyCallback, Status>> ready;
    std::vector<cudaEvent_t> freed;
    std::vector<InFlight> pending;
    for (InFlight& f : mine) {
      const cudaError_t state = cudaEventQuery(f.event);
      if (state == cudaErrorNotReady && !pastDeadline) {
        pending.push_back(std::move(f));
        continue;
      }
      if (state == cudaErrorNotReady) {
        ready.emplace_back(std::move(f.done),
                           timedOut("copy (" + gpu::describe(f.request) +
                                    ") still running when the copy engine closed; it may still "
                                    "write its destination"));
        continue;  // the event stays with the running copy
      }
      ready.emplace_back(std::move(f.done),
                         cudaStatus(state, "copy (" + gpu::describe(f.request) + ")"));
      freed.push_back(f.event);
    }
    mine = std::move(pending);
    for (auto& [done, status] : ready) done(std::move(status));
    if (!ready.empty()) {
      {
        sync::MutexLock lock(mutex_);
        inFlight_ -= ready.size();
        spareEvents_.insert(spareEvents_.end(), freed.begin(), freed.end());
      }
      drained_.notify_all();
    } else if (!mine.empty()) {
      std::this_thread::sleep_for(kPollInterval);
    }
  }
}

}  // namespace kvx::engine::gpu::cuda
