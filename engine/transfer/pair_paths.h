#pragma once

// PairPaths: the data path of each descriptor's region pair while one transfer is planned
// (chooseDataPath), decided again only when the pair changes from the previous descriptor's.
// Consecutive descriptors usually share their regions, so planning host memory costs two
// pointer comparisons per descriptor. It also refuses what a plan cannot hold: remote memory
// that needs staging on a target without a staging window, and staged memory on a second
// device (a transfer stages through one device).
//
// Threads: one planning call's; not shared. Lifetime: REQUIRES the reach and the peer's name
// outlive it, and the regions passed to of() live while it is used.

#include <cstddef>
#include <string>

#include "engine/memory/local_region.h"
#include "engine/peer/remote_region.h"
#include "engine/transfer/data_path.h"
#include "kvx/result.h"

namespace kvx::engine {

class PairPaths {
 public:
  // `window`: the peer publishes a staging window.
  PairPaths(const GpuReach& reach, const std::string& peer, bool window)
      : reach_(reach), peer_(peer), window_(window) {}

  // The path of descriptor `index`, or why it cannot be planned.
  Result<DataPath> of(std::size_t index, const LocalRegion& local, const RemoteRegion& remote);

 private:
  const GpuReach& reach_;
  const std::string& peer_;
  const bool window_;
  const LocalRegion* local_ = nullptr;
  const RemoteRegion* remote_ = nullptr;
  DataPath path_ = DataPath::kDirect;
  int stagedDevice_ = -1;
};

}  // namespace kvx::engine
