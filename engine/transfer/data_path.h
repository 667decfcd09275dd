#pragma once

// DataPath: how the bytes of one (local region, remote region) pair move, decided once per
// region pair when a transfer is planned, never per operation.
//   direct           the transport reads and writes both regions itself (host memory, or
//                    GPU memory with a transport built for it: GPUDirect)
//   staged locally   the local region is GPU memory the transport cannot reach: this side
//                    copies it through registered host buffers (StagedPipeline) and the
//                    transport moves the buffers
//   staged remotely  the remote region is GPU memory its owner could not register with its
//                    transport, and the owner publishes a staging window: the transport
//                    moves the bytes between this side's memory and a window slot, and the
//                    owner's copy engine moves them between the slot and its device
//   staged on both   the same, from or to local GPU memory the transport cannot reach: it
//                    goes through this side's staging buffers first (device -> local buffer
//                    -> window slot -> device, and back for READ)
//   needs the target the remote region is such GPU memory but its owner publishes no window
//                    (an older agent, or one that could not make it): refused when the
//                    transfer is made
//
// Thread safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kvx/agent_options.h"
#include "kvx/memory.h"
#include "kvx/status.h"

namespace kvx::engine {

enum class DataPath : std::uint8_t {
  kDirect,
  kStagedLocal,
  kStagedRemote,
  kStagedBoth,
  kNeedsTargetStaging,
};

// True for the paths that go through the peer's staging window.
inline bool stagedRemotely(DataPath path) {
  return path == DataPath::kStagedRemote || path == DataPath::kStagedBoth;
}

std::string_view toString(DataPath path);

// What this side moves directly, for the decision. `cudaDirect`: its CUDA regions are
// registered with the transport, and it reaches peers' registered CUDA regions. `whyNotCuda`
// is the reason when not ("UCX 1.13.1 was built without CUDA support ...", or the choice of
// `path`), empty otherwise. `path` is what AgentOptions::gpuPath asked for.
struct GpuReach {
  bool cudaDirect = false;
  std::string whyNotCuda;
  // With cudaDirect: how the transport moves CUDA memory when that is not GPUDirect (the
  // socket transport copies it through host memory); empty for GPUDirect.
  std::string cudaHow;
  GpuPath path = GpuPath::kAuto;
};

// The reach of an agent whose transport moves CUDA memory (`transportMovesCuda`, else
// `transportWhyNot`) under `path`: kStaged turns direct off even when the transport could;
// kAuto and kDirect take the transport's answer (kDirect then refuses GPU memory it cannot
// move, in the registry, rather than staging it).
GpuReach gpuReachOf(bool transportMovesCuda, std::string transportWhyNot, GpuPath path);

// `remoteKeyed`: the peer published a transport key for the remote region, i.e. its own
// transport registered the memory (a peer whose transport cannot move CUDA memory
// publishes its CUDA regions without one). `remoteWindow`: the peer publishes a staging
// window, through which it copies such regions itself.
inline DataPath chooseDataPath(MemoryKind local, MemoryKind remote, bool remoteKeyed,
                               bool cudaDirect, bool remoteWindow = false) {
  if (local == MemoryKind::kHost && remote == MemoryKind::kHost) return DataPath::kDirect;
  if (remote == MemoryKind::kCuda && !(cudaDirect && remoteKeyed)) {
    // Only an unkeyed region is the window's to serve: a keyed one its owner moves directly,
    // and only this side's transport is missing.
    if (!remoteWindow || remoteKeyed) return DataPath::kNeedsTargetStaging;
    return local == MemoryKind::kCuda && !cudaDirect ? DataPath::kStagedBoth
                                                     : DataPath::kStagedRemote;
  }
  if (local == MemoryKind::kCuda && !cudaDirect) return DataPath::kStagedLocal;
  return DataPath::kDirect;
}

// "GPUDirect: on (the transport moves CUDA memory itself)",
// "GPUDirect: off, staged through host: <why>", or, under gpuPath direct, "GPUDirect: off,
// and GPU memory is refused (gpu path 'direct'): <why>".
std::string describeGpuDirect(const GpuReach& reach);

// What one agent and one of its peers have of GPU memory, for describeGpuMemory.
struct GpuMemorySides {
  GpuReach reach;               // this agent's
  std::size_t localDirect = 0;  // this agent's CUDA regions registered with the transport
  std::size_t localStaged = 0;  // ... and those it stages (StagedOnlyMemory)
  std::size_t peerKeyed = 0;    // the peer's exposed CUDA regions with a transport key
  std::size_t peerUnkeyed = 0;  // ... and without one (its transport cannot move them)
  bool peerWindow = false;      // the peer publishes a staging window
};

// How GPU memory moves between this agent and the peer, as the data paths chooseDataPath
// would pick: "no GPU memory on either side", or "GPU memory: staged through host (<why>);
// peer's GPU memory: through its staging window", with "direct (the transport moves it
// itself)", "none here", "none exposed", or why the peer's cannot be reached.
std::string describeGpuMemory(const GpuMemorySides& sides);

// FAILED_PRECONDITION for a pair that needs target-side staging its peer does not offer:
// names the descriptor, the remote region and its peer, why it cannot go direct, and what to
// do instead.
Status targetStagingRefused(std::size_t index, const RegionInfo& remote, std::string_view peer,
                            const GpuReach& reach);

}  // namespace kvx::engine
