#include "engine/transfer/pair_paths.h"

namespace kvx::engine {

Result<DataPath> PairPaths::of(std::size_t index, const LocalRegion& local,
                               const RemoteRegion& remote) {
  if (&local == local_ && &remote == remote_) return path_;
  local_ = &local;
  remote_ = &remote;
  path_ = chooseDataPath(local.info.kind, remote.info.kind, !remote.packedKey.empty(),
                         reach_.cudaDirect, window_);
  if (path_ == DataPath::kNeedsTargetStaging) {
    local_ = nullptr;  // not cached: the same pair asked again is refused again
    return targetStagingRefused(index, remote.info, peer_, reach_);
  }
  if (path_ == DataPath::kStagedLocal || path_ == DataPath::kStagedBoth) {
    if (stagedDevice_ >= 0 && stagedDevice_ != local.info.device) {
      local_ = nullptr;
      return invalidArgument(
          "descriptor " + std::to_string(index) + ": local region '" + local.info.name +
          "' is on CUDA device " + std::to_string(local.info.device) +
          " but earlier staged descriptors are on device " + std::to_string(stagedDevice_) +
          "; a transfer stages through one device: split it per device");
    }
    stagedDevice_ = local.info.device;
  }
  return path_;
}

}  // namespace kvx::engine
