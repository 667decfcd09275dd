#pragma once

// CopyEngine: asynchronous copies between host and GPU memory (host to device, device to
// host, device to device). The staged data path moves GPU memory through pinned host buffers
// with it; CudaCopyEngine (cuda/) is the real one, FakeCopyEngine the CUDA-free test double.
// Created through createCopyEngine() (copy_engine_factory.h) or directly (the fake).
//
// Guarantees every implementation keeps:
// - `done` fires exactly once per copy() call: with OK when the bytes are in place, with an
//   error otherwise. A copy refused when submitted (engine closed, null range, rejected by
//   the runtime) and a zero-length copy (OK) fire it before copy() returns; every other
//   outcome fires it from the engine's completion thread.
// - `done` never runs under an engine lock: it may call copy() again (chaining copies is the
//   normal use); it must not call close() expecting it to wait, nor destroy the engine.
// - close() rejects new copies (CANCELLED), fails copies not yet started with CANCELLED and
//   waits, up to a deadline, for the ones already running (they cannot be recalled from a
//   device) so that no byte is written after close() returns; it is idempotent.
//
// Thread safety: every member may be called from any thread. The destructor closes the
// engine and joins its threads; it must not run on a completion callback.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "kvx/status.h"

namespace kvx::engine::gpu {

enum class CopyKind : std::uint8_t {
  kHostToDevice,
  kDeviceToHost,
  kDeviceToDevice,
};

std::string_view toString(CopyKind kind);

// One copy. REQUIRES: both ranges stay valid until `done` fires. Host ranges should be
// pinned (staging buffers are): a copy from or to pageable memory may block the caller.
struct CopyRequest {
  void* destination = nullptr;
  const void* source = nullptr;
  std::size_t length = 0;
  CopyKind kind = CopyKind::kDeviceToHost;
};

// "device to host, 65536 bytes, 0x7f..00 -> 0x7f..00", for error messages.
std::string describe(const CopyRequest& request);

// INVALID_ARGUMENT naming the request when a range is null; OK otherwise (also for length 0).
Status checkCopyRequest(const CopyRequest& request);

using CopyCallback = std::function<void(Status)>;

struct CopyEngineOptions {
  int device = 0;           // the CUDA device whose streams run the copies
  std::size_t streams = 2;  // copies are spread round-robin over this many streams
  std::chrono::milliseconds closeTimeout{5000};  // how long close() waits for running copies
};

class CopyEngine {
 public:
  virtual ~CopyEngine() = default;

  // Starts one asynchronous copy; `done` fires exactly once with the outcome.
  virtual void copy(const CopyRequest& request, CopyCallback done) = 0;

  // Rejects new copies, fails queued ones, waits for running ones (see above). Idempotent.
  virtual void close() = 0;

  // "CUDA copy engine on device 0 (NVIDIA H100, 2 streams)", "fake copy engine".
  virtual std::string describe() const = 0;
};

}  // namespace kvx::engine::gpu
