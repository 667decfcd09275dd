#pragma once

// FakeGpuRuntime: a CUDA-free GpuRuntime for tests of the staged data path. "Device memory"
// is host memory: what allocateDevice() hands out, and ranges a test declares, are reported
// by probe() as CUDA memory of their device, so regions declared MemoryKind::kCuda pass the
// registration check. Each device has one FakeCopyEngine (memcpy on a worker thread) that
// tests reach through copyEngine() to pause it or fail copies; the engines that
// createCopyEngine() returns are handles on it. Staging memory is plain host memory.
// describe() says it is a test double, so that no report made with it passes for a GPU run.
// Tests inject one (EngineOptions::gpuRuntime), or a whole process runs on one when
// KVX_GPU_RUNTIME=fake or fake-strict (gpuRuntime(), gpu_runtime_registry.cc).
//
// Strict (FakeDeviceAccess::kCopyEngineOnly, KVX_GPU_RUNTIME=fake-strict): device memory is
// as unreachable by the CPU as a real GPU's. allocateDevice() maps one shared memory object
// twice: the address it hands out is an inaccessible (PROT_NONE) mapping, so any host load or
// store through a device pointer faults (SIGSEGV), and the kernel refuses to populate it as it
// refuses a CUDA mapping; the copy engines reach the bytes through a second, writable mapping
// of the same pages. That makes the class of GPU defects where the CPU touches device memory
// fail here as it fails on a GPU.
//
// Thread safety: every member may be called from any thread. Lifetime: owned by the test; it
// must outlive every handle, allocation and engine that uses it.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpu/fake_copy_engine.h"
#include "engine/gpu/gpu_runtime.h"
#include "sync/mutex.h"

namespace kvx::engine::gpu {

// Who may touch fake device memory: the CPU as well (host memory), or the copy engines only.
enum class FakeDeviceAccess : std::uint8_t { kHostVisible, kCopyEngineOnly };

class FakeGpuRuntime : public GpuRuntime {
 public:
  // `origin` says where the fake came from, for describe() ("KVX_GPU_RUNTIME=fake").
  explicit FakeGpuRuntime(int devices = 1, FakeCopyOptions copyOptions = {},
                          std::string origin = {},
                          FakeDeviceAccess access = FakeDeviceAccess::kHostVisible);
  ~FakeGpuRuntime() override;

  FakeGpuRuntime(const FakeGpuRuntime&) = delete;
  FakeGpuRuntime& operator=(const FakeGpuRuntime&) = delete;

  bool compiledIn() const override { return true; }
  std::string describe() const override;
  bool emulated() const override { return true; }
  Result<int> deviceCount() const override;
  MemoryProbe probe(const void* address) const override;
  Result<void*> allocateDevice(std::size_t bytes, int device) override;
  Status freeDevice(void* address) override;
  // Counts the calls (boundThreads()); fails for a device out of range.
  Status bindThread(int device) override;
  Result<std::shared_ptr<StagingAllocator>> pinnedAllocator() override;
  // Records the range (pinnedHostBytes()); nothing else: fake copies run at one speed. A
  // range inside one pinned already is kAlreadyPinned; one that overlaps a pinned range in
  // part is refused (FAILED_PRECONDITION), as cudaHostRegister refuses it; unpinning an
  // address not pinned does nothing.
  Result<HostPinning> pinHost(void* address, std::size_t bytes) override;
  void unpinHost(void* address) override;
  // A handle on the device's FakeCopyEngine. Closing the handle rejects its later copies and
  // waits (up to 5 s) for those it submitted; the shared engine keeps running.
  Result<std::unique_ptr<CopyEngine>> createCopyEngine(const CopyEngineOptions& options) override;

  // From now on [address, +length) is "device memory" of `device` (memory the test owns).
  void declareDeviceMemory(void* address, std::size_t length, int device);
  // REQUIRES: 0 <= device < the device count.
  FakeCopyEngine& copyEngine(int device) { return *engines_[static_cast<std::size_t>(device)]; }
  // How many times bindThread() succeeded.
  std::uint64_t threadBindings() const;
  // Bytes of host memory pinned now (pinHost() less unpinHost()).
  std::size_t pinnedHostBytes() const;
  // From now on pinHost() fails with `why` (a runtime that cannot pin some memory, as
  // cudaHostRegister refuses some mappings); an ok status makes it succeed again.
  void failPinning(Status why);
  FakeDeviceAccess access() const { return access_; }
  // `request` with every device address of a strict allocation replaced by the same byte of
  // its writable mapping: what the copy engines copy. Other addresses are unchanged.
  CopyRequest copyEngineView(const CopyRequest& request) const;

 private:
  struct Range {
    std::uintptr_t end;
    int device;
    bool owned;               // from allocateDevice(): freed by freeDevice() or the destructor
    std::uintptr_t view = 0;  // strict: the writable mapping of the same pages, else 0
    std::size_t mapped = 0;   // strict: bytes of each mapping
  };
  Result<void*> allocateStrict(std::size_t bytes, std::size_t rounded, int device);
  void release(std::uintptr_t start, const Range& range);
  // The writable view of `address` if it lies in a strict allocation. REQUIRES: mutex_ held.
  void* viewLocked(const void* address) const KVX_REQUIRES(mutex_);

  const int devices_;
  const FakeDeviceAccess access_;
  const std::string origin_;
  std::vector<std::unique_ptr<FakeCopyEngine>> engines_;
  mutable sync::Mutex mutex_;
  std::map<std::uintptr_t, Range> ranges_ KVX_GUARDED_BY(mutex_);  // by start address
  std::uint64_t threadBindings_ KVX_GUARDED_BY(mutex_) = 0;
  std::map<const void*, std::size_t> pinned_ KVX_GUARDED_BY(mutex_);  // pinHost() ranges
  Status pinFailure_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine::gpu
