#pragma once

// TransferPlan: what goes on the wire for one transfer. PlanBuilder turns resolved segments
// into operations, coalescing a segment into the previous operation when both sides continue
// where it ended, and splitting anything larger than the maximum operation size. Segments
// whose data path is staged (local GPU memory the transport cannot move) become staged
// operations, kept apart: the transport never sees their local address. Segments whose
// remote side is the peer's GPU memory, served through its staging window, become remote
// staged operations (from memory the transport reaches) or both-staged ones (from local GPU
// memory, which goes through this side's staging buffers first).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/memory/local_region.h"
#include "engine/peer/remote_region.h"
#include "engine/transfer/data_path.h"

namespace kvx::engine {

struct PlannedOp {
  std::uint8_t* local = nullptr;
  const TransportMemory* localMemory = nullptr;
  std::uint64_t remoteAddress = 0;
  std::uint32_t remoteSlot = 0;  // index into TransferPlan::remoteRegions
  std::uint64_t length = 0;
};

struct TransferPlan {
  std::vector<PlannedOp> ops;  // direct: posted on the endpoint as they are
  // Staged through host buffers (localMemory is not a transport registration), all on
  // CUDA device `stagedDevice`.
  std::vector<PlannedOp> stagedOps;
  std::uint64_t stagedBytes = 0;  // staged on this side (stagedOps and bothStagedOps)
  int stagedDevice = -1;
  // The local regions staged on this side, by name, in the order the plan first used them.
  std::vector<std::string> stagedRegions;
  // Through the peer's staging window: from local memory the transport reaches, and from
  // local GPU memory staged on this side too (on `stagedDevice`).
  std::vector<PlannedOp> remoteStagedOps;
  std::vector<PlannedOp> bothStagedOps;
  std::uint64_t remoteStagedBytes = 0;  // both lists
  // Every region the plan touches, once each; they keep the registrations alive.
  std::vector<std::shared_ptr<LocalRegion>> localRegions;
  std::vector<std::shared_ptr<RemoteRegion>> remoteRegions;
  std::uint64_t descriptors = 0;
  std::uint64_t bytes = 0;
};

// "GPU region 'kv.t0' on CUDA device 0" (or "GPU regions 'a', 'b' on ..."): what the
// plan stages on this side, for the errors of its staged moves.
std::string describeStagedSource(const TransferPlan& plan);

// Not thread-safe: one builder per plan. REQUIRES: segments were bounds-checked already.
class PlanBuilder {
 public:
  explicit PlanBuilder(std::uint64_t maxOpBytes, std::size_t expectedSegments = 0);

  // REQUIRES: `path` is not kNeedsTargetStaging, and every segment staged on this side is
  // on one device.
  void add(const std::shared_ptr<LocalRegion>& local, std::uint64_t localOffset,
           const std::shared_ptr<RemoteRegion>& remote, std::uint64_t remoteOffset,
           std::uint64_t length, DataPath path = DataPath::kDirect);

  TransferPlan finish() &&;

 private:
  std::uint32_t remoteSlot(const std::shared_ptr<RemoteRegion>& remote);
  void noteLocal(const std::shared_ptr<LocalRegion>& local);
  // Records the name of a region staged on this side (TransferPlan::stagedRegions).
  void noteStaged(const LocalRegion& local);

  std::uint64_t maxOpBytes_;
  TransferPlan plan_;
  const LocalRegion* lastLocal_ = nullptr;
  const LocalRegion* lastStaged_ = nullptr;
  const RemoteRegion* lastRemote_ = nullptr;
  std::uint32_t lastRemoteSlot_ = 0;
};

}  // namespace kvx::engine
