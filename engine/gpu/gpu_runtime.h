#pragma once

// GpuRuntime: what kvx needs from a GPU runtime: which devices are visible, where a pointer
// lives, device memory, pinned staging memory and copy engines. cuda/ is the CUDA runtime
// backend, HostOnlyGpuRuntime the one of a build without CUDA; gpuRuntime() (in
// gpu_runtime_registry.cc, the only file that knows whether CUDA is compiled in) returns the
// process's one instance.
//
// Thread safety: every member may be called from any thread. Lifetime: the instance lives
// until the process exits.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/gpu/copy_engine.h"
#include "engine/gpu/memory_probe.h"
#include "engine/gpu/staging_pool.h"
#include "kvx/result.h"

namespace kvx::engine::gpu {

// What pinHost() found and did.
enum class HostPinning : std::uint8_t {
  kPinned,         // pinned now: unpinHost() it before the memory is freed
  kAlreadyPinned,  // the whole range was pinned already, by its allocator (a UCX built with
                   // CUDA registers the host memory it allocates): not the caller's to unpin
};

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;

  // False for the host-only runtime of a build without CUDA.
  virtual bool compiledIn() const = 0;
  // "CUDA runtime 13.0, driver 12.8", "built without CUDA".
  virtual std::string describe() const = 0;
  // True for a test double whose devices are host memory and whose copies are CPU memcpys:
  // what it measures says nothing of a GPU.
  virtual bool emulated() const { return false; }
  // Devices this process sees; the runtime's reason when it cannot use any (no driver, no
  // device), e.g. "cudaGetDeviceCount: cudaErrorNoDevice: no CUDA-capable device is detected".
  virtual Result<int> deviceCount() const = 0;
  virtual MemoryProbe probe(const void* address) const = 0;

  // Device memory of `device`, for tests and agent-allocated CUDA regions.
  virtual Result<void*> allocateDevice(std::size_t bytes, int device) = 0;
  virtual Status freeDevice(void* address) = 0;
  // Makes `device` (its primary context, for CUDA) current on the calling thread, for code
  // that needs one without choosing it: a UCX built with CUDA copies device memory on the
  // thread that posts or progresses, and fails without a current context.
  virtual Status bindThread(int device) = 0;
  // Pinned host memory for staging buffers.
  virtual Result<std::shared_ptr<StagingAllocator>> pinnedAllocator() = 0;
  // Pins `bytes` of host memory at `address` that was allocated elsewhere (a transport's
  // shared-memory segment), so that the copy engine moves it at full speed
  // (cudaHostRegister); unpinHost() undoes a kPinned, before the memory is freed. A range
  // that is pinned already as a whole is kAlreadyPinned and left as it is; one that is
  // pinned in part cannot be pinned (FAILED_PRECONDITION), as cudaHostRegister refuses it.
  virtual Result<HostPinning> pinHost(void* address, std::size_t bytes) = 0;
  virtual void unpinHost(void* address) = 0;
  // A copy engine on `options.device`. REQUIRES: deviceCount() > options.device.
  virtual Result<std::unique_ptr<CopyEngine>> createCopyEngine(
      const CopyEngineOptions& options) = 0;
};

// The process's runtime, chosen at the first call: the CUDA runtime in a build with CUDA,
// HostOnlyGpuRuntime in one without; or, when the environment variable KVX_GPU_RUNTIME is
// "fake", a FakeGpuRuntime of kFakeDevices devices whose device memory is host memory and
// whose copies are FakeCopyEngine memcpys (agent processes with CUDA pools, in tests on a
// machine without a GPU; its describe() says so); "fake-strict": the same, with device memory
// the CPU cannot touch (FakeDeviceAccess::kCopyEngineOnly). Another value than those
// parseGpuRuntimeChoice accepts is reported once on stderr and ignored.
GpuRuntime& gpuRuntime();

// CPU time this process has spent so far in copies that a GPU's copy engine makes by DMA: the
// memcpys of the fake runtime's copy engines (zero for CUDA, whose copies cost the CPU only
// their submission). Reports subtract it, so that a run on the fake runtime shows the CPU kvx
// itself spends. Safe from any thread; does not create the runtime.
std::chrono::nanoseconds emulatedCopyCpu();

inline constexpr const char* kGpuRuntimeVariable = "KVX_GPU_RUNTIME";
// As many devices as a large GPU node, so that any device ordinal a test gives works.
inline constexpr int kFakeDevices = 8;

enum class GpuRuntimeChoice : std::uint8_t { kNative, kFake, kFakeStrict };
// KVX_GPU_RUNTIME's value: unset or empty, "auto" or "cuda": the native runtime; "fake":
// the fake one; "fake-strict": the strict fake; anything else: INVALID_ARGUMENT naming the
// accepted values.
Result<GpuRuntimeChoice> parseGpuRuntimeChoice(std::string_view value);

}  // namespace kvx::engine::gpu
