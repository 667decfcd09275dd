#pragma once

// Where a pointer lives, as the GPU runtime sees it (cudaPointerGetAttributes), and the check
// that memory handed to kvx is what the caller declared: a CUDA region that is really host
// memory (or the other way round, or on another device) fails at registration with a message
// that says what was found, instead of corrupting data or crashing inside a copy later.
//
// Thread safety: free functions, callable from any thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "kvx/memory.h"
#include "kvx/status.h"

namespace kvx::engine::gpu {

struct MemoryProbe {
  enum class Kind : std::uint8_t {
    kHost,     // host memory (pageable, or pinned by CUDA)
    kCuda,     // device memory of `device`
    kManaged,  // CUDA managed memory, reachable from the host and from `device`
    kUnknown,  // the runtime cannot tell (built without CUDA): `detail` says why
  };
  Kind kind = Kind::kUnknown;
  int device = -1;     // kCuda, kManaged: the owning device
  std::string detail;  // how it was decided, for messages ("cudaPointerGetAttributes: ...")
};

std::string_view toString(MemoryProbe::Kind kind);

// Asks the GPU runtime compiled in. Without CUDA: kUnknown; with CUDA but no device visible:
// kHost (no device memory can exist in this process).
MemoryProbe probeMemory(const void* address);

using MemoryProber = std::function<MemoryProbe(const void*)>;

// OK when [address, +length) is memory of `declaredKind` (and, for kCuda, of
// `declaredDevice`), judged by probing its first and last byte. Otherwise FAILED_PRECONDITION
// naming the range, what was declared and what was found, and what to declare instead;
// UNIMPLEMENTED for CUDA memory in a build without CUDA. Host memory is accepted unchecked
// when the runtime cannot tell; managed memory is accepted as host memory and as device
// memory of its device.
Status checkDeclaredKind(const void* address, std::uint64_t length, MemoryKind declaredKind,
                         int declaredDevice);
// The same with another prober (tests).
Status checkDeclaredKind(const void* address, std::uint64_t length, MemoryKind declaredKind,
                         int declaredDevice, const MemoryProber& probe);

}  // namespace kvx::engine::gpu
