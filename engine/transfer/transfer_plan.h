#pragma once

// TransferPlan: what goes on the wire for one transfer. PlanBuilder turns resolved segments
// into operations, coalescing a segment into the previous operation when both sides continue
// where it ended, and splitting anything larger than the maximum operation size. Segments
// whose data path is staged (local GPU memory the transport cannot move) become staged
// operations, kept apart: the transport never sees their local address.

#include <cstdint>
#include <memory>
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
  std::uint64_t stagedBytes = 0;
  int stagedDevice = -1;
  // Every region the plan touches, once each; they keep the registrations alive.
  std::vector<std::shared_ptr<LocalRegion>> localRegions;
  std::vector<std::shared_ptr<RemoteRegion>> remoteRegions;
  std::uint64_t descriptors = 0;
  std::uint64_t bytes = 0;
};

// Not thread-safe: one builder per plan. REQUIRES: segments were bounds-checked already.
class PlanBuilder {
 public:
  explicit PlanBuilder(std::uint64_t maxOpBytes, std::size_t expectedSegments = 0);

  // REQUIRES: `path` is kDirect or kStagedLocal, and every staged segment is on one device.
  void add(const std::shared_ptr<LocalRegion>& local, std::uint64_t localOffset,
           const std::shared_ptr<RemoteRegion>& remote, std::uint64_t remoteOffset,
           std::uint64_t length, DataPath path = DataPath::kDirect);

  TransferPlan finish() &&;

 private:
  std::uint32_t remoteSlot(const std::shared_ptr<RemoteRegion>& remote);
  void noteLocal(const std::shared_ptr<LocalRegion>& local);

  std::uint64_t maxOpBytes_;
  TransferPlan plan_;
  const LocalRegion* lastLocal_ = nullptr;
  const RemoteRegion* lastRemote_ = nullptr;
  std::uint32_t lastRemoteSlot_ = 0;
};

}  // namespace kvx::engine
