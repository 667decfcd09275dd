#pragma once

// MoveRecord: one move as the FakeNetwork (fake_kv_port.h) saw it, kept after it completed
// for the test to inspect.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kv/handoff/kv_port.h"
#include "kv/pool/head_slice.h"

namespace kvx::test::handoff {

// One move as the network saw it (kept after it completed, for the test to inspect).
struct MoveRecord {
  kv::handoff::MoveId id = 0;
  std::string owner, peer;
  TransferOp op = TransferOp::kWrite;
  std::vector<std::uint64_t> local, remote;
  std::uint32_t firstLayer = 0, layerCount = 0;
  kv::HeadSlice heads;                      // whole segments by default
  std::optional<std::string> notification;  // encoded
  std::function<void(kv::handoff::MoveResult)> onDone;
  Status failWith;  // scripted failure, applied when it would land
  bool cancelRequested = false;
  bool landed = false;    // bytes copied
  bool aborted = false;   // will complete with an error, copied nothing
  bool linkLost = false;  // its link dropped before it landed: it cannot land any more
  bool completed = false;
  Status status;
  std::uint64_t bytes = 0;
  // May still read or write its blocks.
  bool touching() const { return !completed && !landed && !linkLost; }
};

}  // namespace kvx::test::handoff
