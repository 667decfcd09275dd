#include "engine/gpu/fake_gpu_runtime.h"

#include <condition_variable>
#include <cstdlib>
#include <utility>

namespace kvx::engine::gpu {

namespace {

// A CopyEngine that submits to a shared FakeCopyEngine and keeps count of its own copies,
// so that close() can wait for them without stopping the shared engine. The count lives
// apart from the handle: a copy that outlasts close()'s wait must not reach a dead handle.
class FakeCopyHandle final : public CopyEngine {
 public:
  FakeCopyHandle(FakeCopyEngine& engine, int device) : engine_(engine), device_(device) {}
  ~FakeCopyHandle() override { close(); }

  void copy(const CopyRequest& request, CopyCallback done) override {
    bool refused = false;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      refused = state_->closed;
      if (!refused) ++state_->inFlight;
    }
    if (refused) {
      done(cancelled("copy (" + gpu::describe(request) + ") refused: the copy engine is closed"));
      return;
    }
    engine_.copy(request, [state = state_, done = std::move(done)](Status status) {
      done(std::move(status));
      std::lock_guard<std::mutex> lock(state->mutex);
      if (--state->inFlight == 0) state->idle.notify_all();
    });
  }

  void close() override {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->closed = true;
    // A paused shared engine would hold this forever: bounded, like the real close.
    state_->idle.wait_for(lock, std::chrono::seconds(5), [&] { return state_->inFlight == 0; });
  }

  std::string describe() const override {
    return engine_.describe() + " for fake device " + std::to_string(device_);
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable idle;
    std::size_t inFlight = 0;  // GUARDED_BY(mutex)
    bool closed = false;       // GUARDED_BY(mutex)
  };

  FakeCopyEngine& engine_;
  const int device_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

FakeGpuRuntime::FakeGpuRuntime(int devices, FakeCopyOptions copyOptions, std::string origin)
    : devices_(devices), origin_(std::move(origin)) {
  for (int d = 0; d < devices; ++d)
    engines_.push_back(std::make_unique<FakeCopyEngine>(copyOptions));
}

FakeGpuRuntime::~FakeGpuRuntime() {
  for (auto& engine : engines_) engine->close();
  for (auto& [start, range] : ranges_) {
    if (range.owned) std::free(reinterpret_cast<void*>(start));
  }
}

std::string FakeGpuRuntime::describe() const {
  return "fake GPU runtime (" + (origin_.empty() ? std::string() : origin_ + "; ") +
         "test double, device memory is host memory; " + std::to_string(devices_) + " device(s))";
}

Result<int> FakeGpuRuntime::deviceCount() const { return devices_; }

MemoryProbe FakeGpuRuntime::probe(const void* address) const {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ranges_.upper_bound(at);
  if (it != ranges_.begin()) {
    --it;
    if (at < it->second.end) {
      return MemoryProbe{MemoryProbe::Kind::kCuda, it->second.device, "fake device memory"};
    }
  }
  return MemoryProbe{MemoryProbe::Kind::kHost, -1, "fake runtime: not fake device memory"};
}

Result<void*> FakeGpuRuntime::allocateDevice(std::size_t bytes, int device) {
  if (device < 0 || device >= devices_) {
    return invalidArgument("fake CUDA device " + std::to_string(device) + " does not exist (" +
                           std::to_string(devices_) + " visible)");
  }
  const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
  void* address = std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded);
  if (address == nullptr) {
    return resourceExhausted("cannot allocate " + std::to_string(bytes) +
                             " bytes of fake device memory");
  }
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard<std::mutex> lock(mutex_);
  ranges_[start] = Range{start + bytes, device, true};
  return address;
}

Status FakeGpuRuntime::freeDevice(void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ranges_.find(reinterpret_cast<std::uintptr_t>(address));
  if (it == ranges_.end() || !it->second.owned) {
    return invalidArgument("fake runtime: no device allocation starts at this address");
  }
  std::free(address);
  ranges_.erase(it);
  return Status::ok();
}

Status FakeGpuRuntime::bindThread(int device) {
  if (device < 0 || device >= devices_) {
    return invalidArgument("fake runtime: no device " + std::to_string(device));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++threadBindings_;
  return Status::ok();
}

std::uint64_t FakeGpuRuntime::threadBindings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return threadBindings_;
}

Result<std::shared_ptr<StagingAllocator>> FakeGpuRuntime::pinnedAllocator() {
  return std::shared_ptr<StagingAllocator>(std::make_shared<HostStagingAllocator>());
}

Result<std::unique_ptr<CopyEngine>> FakeGpuRuntime::createCopyEngine(
    const CopyEngineOptions& options) {
  if (options.device < 0 || options.device >= devices_) {
    return invalidArgument("fake CUDA device " + std::to_string(options.device) +
                           " does not exist (" + std::to_string(devices_) + " visible)");
  }
  return std::unique_ptr<CopyEngine>(std::make_unique<FakeCopyHandle>(
      *engines_[static_cast<std::size_t>(options.device)], options.device));
}

void FakeGpuRuntime::declareDeviceMemory(void* address, std::size_t length, int device) {
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard<std::mutex> lock(mutex_);
  ranges_[start] = Range{start + length, device, false};
}

}  // namespace kvx::engine::gpu
