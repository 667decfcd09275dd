#pragma once

// StagedWire: the seam between StagedPipeline and whatever carries a staged chunk between
// hosts (a transport endpoint in the engine, a fake in tests). The pipeline numbers bytes by
// their offset in the move: the concatenation of its pieces, in order.

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kvx/status.h"

namespace kvx::engine::gpu {

using WireCallback = std::function<void(Status)>;

class StagedWire {
 public:
  // Sending: carries the `length` bytes at `staging` to the destination's byte `offset` of the
  // move. Receiving: fills `staging` with `length` bytes from byte `offset` of the move.
  // `done` fires exactly once, from any thread, possibly before postWire returns; the wire
  // must not touch `staging` after it fired. Called from any thread, never under a pipeline
  // lock, possibly from a copy engine's completion callback.
  virtual void postWire(std::byte* staging, std::uint64_t offset, std::size_t length,
                        WireCallback done) = 0;

 protected:
  ~StagedWire() = default;
};

}  // namespace kvx::engine::gpu
