#include "engine/transfer/data_path.h"

#include <utility>
#include <vector>

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

GpuReach gpuReachOf(bool transportMovesCuda, std::string transportWhyNot, GpuPath path) {
  GpuReach reach;
  reach.path = path;
  reach.cudaDirect = transportMovesCuda && path != GpuPath::kStaged;
  if (!transportMovesCuda) {
    reach.whyNotCuda = std::move(transportWhyNot);
  } else if (path == GpuPath::kStaged) {
    reach.whyNotCuda =
        "gpu path 'staged' was chosen (AgentOptions::gpuPath), although the transport could "
        "move CUDA memory directly";
  }
  return reach;
}

std::string describeGpuDirect(const GpuReach& reach) {
  if (reach.cudaDirect && !reach.cudaHow.empty()) {
    return "GPUDirect: off; the transport moves CUDA memory itself, " + reach.cudaHow;
  }
  if (reach.cudaDirect) return "GPUDirect: on (the transport moves CUDA memory itself)";
  if (reach.path == GpuPath::kDirect) {
    return "GPUDirect: off, and GPU memory is refused (gpu path 'direct'): " + reach.whyNotCuda;
  }
  return "GPUDirect: off, staged through host: " + reach.whyNotCuda;
}

namespace {

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : " and ") + part;
  return out;
}

}  // namespace

std::string describeGpuMemory(const GpuMemorySides& sides) {
  const bool local = sides.localDirect + sides.localStaged != 0;
  const bool peer = sides.peerKeyed + sides.peerUnkeyed != 0;
  if (!local && !peer) return "no GPU memory on either side";
  std::vector<std::string> mine;
  if (sides.localDirect != 0) {
    mine.push_back("direct (the transport moves it itself" +
                   (sides.reach.cudaHow.empty() ? std::string() : ", " + sides.reach.cudaHow) +
                   ")");
  }
  if (sides.localStaged != 0) {
    mine.push_back("staged through host (" + sides.reach.whyNotCuda + ")");
  }
  if (!local) mine.push_back("none here");
  // The peer's regions as chooseDataPath sees them: a keyed one is reached directly or not
  // at all, an unkeyed one only through the peer's window.
  std::vector<std::string> theirs;
  if (sides.peerKeyed != 0) {
    theirs.push_back(sides.reach.cudaDirect
                         ? "direct"
                         : "not reachable: it is registered with the peer's transport, which "
                           "this agent cannot address (" +
                               sides.reach.whyNotCuda + ")");
  }
  if (sides.peerUnkeyed != 0) {
    theirs.push_back(sides.peerWindow ? "through its staging window"
                                      : "not reachable: the peer stages it but publishes no "
                                        "staging window");
  }
  if (!peer) theirs.push_back("none exposed");
  return "GPU memory: " + joined(mine) + "; peer's GPU memory: " + joined(theirs);
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
