#include "engine/transfer/data_path.h"

namespace kvx::engine {

std::string_view toString(DataPath path) {
  switch (path) {
    case DataPath::kDirect: return "direct";
    case DataPath::kStagedLocal: return "staged through host on this side";
    case DataPath::kStagedRemote: return "staged through host on the peer's side";
    case DataPath::kStagedBoth: return "staged through host on both sides";
    case DataPath::kNeedsTargetStaging: return "needs staging on the target";
  }
  return "unknown";
}

std::string describeGpuDirect(const GpuReach& reach) {
  if (reach.cudaDirect) return "GPUDirect: on (the transport moves CUDA memory itself)";
  return "GPUDirect: off, staged through host: " + reach.whyNotCuda;
}

Status targetStagingRefused(std::size_t index, const RegionInfo& remote, std::string_view peer,
                            const GpuReach& reach) {
  std::string why;
  if (!reach.cudaDirect) {
    why = "this agent cannot move CUDA memory directly (" + reach.whyNotCuda + ")";
  } else {
    why = "peer '" + std::string(peer) +
          "' published it without a transport key (its transport cannot move CUDA memory)";
  }
  return failedPrecondition(
      "descriptor " + std::to_string(index) + ": remote region '" + remote.name + "' of peer '" +
      std::string(peer) + "' is CUDA memory of device " + std::to_string(remote.device) + " and " +
      why + "; peer '" + std::string(peer) +
      "' publishes no staging window (an older kvx, or it could not make one): upgrade it, "
      "move the bytes through a host region of the peer, or use a UCX built with CUDA on "
      "both agents");
}

}  // namespace kvx::engine
