#include "engine/gpu/fake_gpu_runtime.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "engine/gpu/page_aligned_alloc.h"

namespace kvx::engine::gpu {

namespace {

// A CopyEngine that submits to a shared FakeCopyEngine and keeps count of its own copies,
// so that close() can wait for them without stopping the shared engine. The count lives
// apart from the handle: a copy that outlasts close()'s wait must not reach a dead handle.
class FakeCopyHandle final : public CopyEngine {
 public:
  FakeCopyHandle(const FakeGpuRuntime& runtime, FakeCopyEngine& engine, int device)
      : runtime_(runtime), engine_(engine), device_(device) {}
  ~FakeCopyHandle() override { close(); }

  void copy(const CopyRequest& request, CopyCallback done) override {
    bool refused = false;
    {
      sync::MutexLock lock(state_->mutex);
      refused = state_->closed;
      if (!refused) ++state_->inFlight;
    }
    if (refused) {
      done(cancelled("copy (" + gpu::describe(request) + ") refused: the copy engine is closed"));
      return;
    }
    engine_.copy(runtime_.copyEngineView(request),
                 [state = state_, done = std::move(done)](Status status) {
                   done(std::move(status));
                   sync::MutexLock lock(state->mutex);
                   if (--state->inFlight == 0) state->idle.notify_all();
                 });
  }

  void close() override {
    sync::UniqueLock lock(state_->mutex);
    state_->closed = true;
    // A paused shared engine would hold this forever: bounded, like the real close.
    state_->idle.wait_for(lock.native(), std::chrono::seconds(5),
                          [&]() KVX_REQUIRES(state_->mutex) { return state_->inFlight == 0; });
  }

  std::string describe() const override {
    return engine_.describe() + " for fake device " + std::to_string(device_);
  }

 private:
  struct State {
    sync::Mutex mutex;
    std::condition_variable idle;
    std::size_t inFlight KVX_GUARDED_BY(mutex) = 0;
    bool closed KVX_GUARDED_BY(mutex) = false;
  };

  const FakeGpuRuntime& runtime_;
  FakeCopyEngine& engine_;
  const int device_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

FakeGpuRuntime::FakeGpuRuntime(int devices, FakeCopyOptions copyOptions, std::string origin,
                               FakeDeviceAccess access)
    : devices_(devices), access_(access), origin_(std::move(origin)) {
  for (int d = 0; d < devices; ++d)
    engines_.push_back(std::make_unique<FakeCopyEngine>(copyOptions));
}

FakeGpuRuntime::~FakeGpuRuntime() {
  for (auto& engine : engines_) engine->close();
  for (auto& [start, range] : ranges_) {
    if (range.owned) release(start, range);
  }
}

void FakeGpuRuntime::release(std::uintptr_t start, const Range& range) {
  if (range.view == 0) {
    std::free(reinterpret_cast<void*>(start));
    return;
  }
  ::munmap(reinterpret_cast<void*>(start), range.mapped);
  ::munmap(reinterpret_cast<void*>(range.view), range.mapped);
}

void* FakeGpuRuntime::viewLocked(const void* address) const {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  auto it = ranges_.upper_bound(at);
  if (it == ranges_.begin()) return nullptr;
  --it;
  if (at >= it->second.end || it->second.view == 0) return nullptr;
  return reinterpret_cast<void*>(it->second.view + (at - it->first));
}

CopyRequest FakeGpuRuntime::copyEngineView(const CopyRequest& request) const {
  if (access_ == FakeDeviceAccess::kHostVisible) return request;
  CopyRequest view = request;
  sync::MutexLock lock(mutex_);
  if (void* d = viewLocked(request.destination)) view.destination = d;
  if (void* s = viewLocked(request.source)) view.source = s;
  return view;
}

std::string FakeGpuRuntime::describe() const {
  return "fake GPU runtime (" + (origin_.empty() ? std::string() : origin_ + "; ") +
         (access_ == FakeDeviceAccess::kHostVisible
              ? "test double, device memory is host memory; "
              : "test double, device memory is host memory the CPU cannot touch; ") +
         std::to_string(devices_) + " device(s))";
}

Result<int> FakeGpuRuntime::deviceCount() const { return devices_; }

MemoryProbe FakeGpuRuntime::probe(const void* address) const {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  sync::MutexLock lock(mutex_);
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
  std::size_t rounded = (bytes + 4095) / 4096 * 4096;
  if (rounded == 0) rounded = 4096;
  if (access_ == FakeDeviceAccess::kCopyEngineOnly) return allocateStrict(bytes, rounded, device);
  void* address = allocatePageAligned(rounded);
  if (address == nullptr) {
    return resourceExhausted("cannot allocate " + std::to_string(bytes) +
                             " bytes of fake device memory");
  }
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  sync::MutexLock lock(mutex_);
  ranges_[start] = Range{start + bytes, device, true};
  return address;
}

Result<void*> FakeGpuRuntime::allocateStrict(std::size_t bytes, std::size_t rounded, int device) {
  const std::string what = "fake device memory of " + std::to_string(bytes) + " bytes";
  const int fd = ::memfd_create("kvx-fake-device", MFD_CLOEXEC);
  if (fd < 0) return resourceExhausted(what + ": memfd_create: " + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(rounded)) != 0) {
    const int error = errno;
    ::close(fd);
    return resourceExhausted(what + ": ftruncate: " + std::strerror(error));
  }
  void* device_view = ::mmap(nullptr, rounded, PROT_NONE, MAP_SHARED, fd, 0);
  // Resident from the start, as cudaMalloc'd memory is: shared-memory pages faulted in by the
  // copy thread one at a time made staged copies slow enough to miss the staging replies'
  // deadline in the demo on two cores.
  void* engine_view =
      ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  const int error = errno;
  ::close(fd);  // the mappings keep the object
  if (device_view == MAP_FAILED || engine_view == MAP_FAILED) {
    if (device_view != MAP_FAILED) ::munmap(device_view, rounded);
    if (engine_view != MAP_FAILED) ::munmap(engine_view, rounded);
    return resourceExhausted(what + ": mmap: " + std::strerror(error));
  }
  const auto start = reinterpret_cast<std::uintptr_t>(device_view);
  sync::MutexLock lock(mutex_);
  ranges_[start] =
      Range{start + bytes, device, true, reinterpret_cast<std::uintptr_t>(engine_view), rounded};
  return device_view;
}

Status FakeGpuRuntime::freeDevice(void* address) {
  sync::MutexLock lock(mutex_);
  auto it = ranges_.find(reinterpret_cast<std::uintptr_t>(address));
  if (it == ranges_.end() || !it->second.owned) {
    return invalidArgument("fake runtime: no device allocation starts at this address");
  }
  release(it->first, it->second);
  ranges_.erase(it);
  return Status::ok();
}

Status FakeGpuRuntime::bindThread(int device) {
  if (device < 0 || device >= devices_) {
    return invalidArgument("fake runtime: no device " + std::to_string(device));
  }
  sync::MutexLock lock(mutex_);
  ++threadBindings_;
  return Status::ok();
}

Result<HostPinning> FakeGpuRuntime::pinHost(void* address, std::size_t bytes) {
  sync::MutexLock lock(mutex_);
  if (!pinFailure_.isOk()) return pinFailure_;
  if (bytes == 0) return invalidArgument("fake runtime: pinning 0 bytes");
  const auto begin = reinterpret_cast<std::uintptr_t>(address);
  const std::uintptr_t end = begin + bytes;
  for (const auto& [pinnedAddress, length] : pinned_) {
    const auto pinnedBegin = reinterpret_cast<std::uintptr_t>(pinnedAddress);
    const std::uintptr_t pinnedEnd = pinnedBegin + length;
    if (begin >= pinnedBegin && end <= pinnedEnd) return HostPinning::kAlreadyPinned;
    if (begin < pinnedEnd && pinnedBegin < end) {
      return failedPrecondition(
          "fake runtime: part of this host memory is pinned already "
          "(cudaErrorHostMemoryAlreadyRegistered)");
    }
  }
  pinned_.emplace(address, bytes);
  return HostPinning::kPinned;
}

void FakeGpuRuntime::unpinHost(void* address) {
  sync::MutexLock lock(mutex_);
  pinned_.erase(address);
}

void FakeGpuRuntime::failPinning(Status why) {
  sync::MutexLock lock(mutex_);
  pinFailure_ = std::move(why);
}

std::size_t FakeGpuRuntime::pinnedHostBytes() const {
  sync::MutexLock lock(mutex_);
  std::size_t bytes = 0;
  for (const auto& [address, length] : pinned_) bytes += length;
  return bytes;
}

std::uint64_t FakeGpuRuntime::threadBindings() const {
  sync::MutexLock lock(mutex_);
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
      *this, *engines_[static_cast<std::size_t>(options.device)], options.device));
}

void FakeGpuRuntime::declareDeviceMemory(void* address, std::size_t length, int device) {
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  sync::MutexLock lock(mutex_);
  ranges_[start] = Range{start + length, device, false};
}

}  // namespace kvx::engine::gpu
