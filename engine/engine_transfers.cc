// Engine: the transfer half (planning, prepared lists, posting, waiting, cancelling).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/engine.h"

namespace kvx::engine {
namespace {

std::string mismatch(std::size_t index, std::uint64_t local, std::uint64_t remote) {
  return "descriptor " + std::to_string(index) + ": local length " + std::to_string(local) +
         " differs from remote length " + std::to_string(remote);
}

// The data path of each descriptor's region pair, decided when the pair changes from the
// previous descriptor's (consecutive descriptors usually share their regions), so a plan of
// host memory pays two pointer comparisons per descriptor.
class PairPaths {
 public:
  // `window`: the peer publishes a staging window.
  PairPaths(const GpuReach& reach, const std::string& peer, bool window)
      : reach_(reach), peer_(peer), window_(window) {}

  // The path of descriptor `index`, or why it cannot be planned: remote memory that needs
  // staging on a target without a staging window, or staged memory on a second device.
  Result<DataPath> of(std::size_t index, const LocalRegion& local, const RemoteRegion& remote) {
    if (&local == local_ && &remote == remote_) return path_;
    local_ = &local;
    remote_ = &remote;
    path_ = chooseDataPath(local.info.kind, remote.info.kind, !remote.packedKey.empty(),
                           reach_.cudaDirect, window_);
    if (path_ == DataPath::kNeedsTargetStaging) {
      local_ = nullptr;
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

 private:
  const GpuReach& reach_;
  const std::string& peer_;
  const bool window_;
  const LocalRegion* local_ = nullptr;
  const RemoteRegion* remote_ = nullptr;
  DataPath path_ = DataPath::kDirect;
  int stagedDevice_ = -1;
};

}  // namespace

Result<TransferId> Engine::addTransfer(std::shared_ptr<RemotePeer> peer, TransferOp op,
                                       TransferPlan plan, std::optional<std::string> notification) {
  KVX_RETURN_IF_ERROR(staging_->prepare(plan));
  const TransferId id = transfers_.nextId();
  auto transfer = std::make_shared<Transfer>(id, std::move(peer), op, std::move(plan),
                                             notificationHeader_, std::move(notification),
                                             options_.maxOpsInFlight, transfers_, staging_.get());
  transfers_.insert(std::move(transfer));
  return id;
}

Result<TransferId> Engine::createTransfer(const TransferRequest& request) {
  if (request.segments.empty()) return invalidArgument("a transfer needs at least one descriptor");
  KVX_ASSIGN_OR_RETURN(auto remote, peer(request.peer));
  PlanBuilder builder(options_.maxOpBytes, request.segments.size());
  PairPaths paths(gpuReach_, remote->name(), remote->stagingWindow() != nullptr);
  std::shared_ptr<LocalRegion> local;
  std::shared_ptr<RemoteRegion> region;
  for (std::size_t i = 0; i < request.segments.size(); ++i) {
    const TransferSegment& s = request.segments[i];
    if (s.local.length != s.remote.length) {
      return invalidArgument(mismatch(i, s.local.length, s.remote.length));
    }
    // Consecutive descriptors usually name the same regions: look each up only on change.
    if (!local || local->info.id != s.local.region) {
      KVX_ASSIGN_OR_RETURN(local, registry_->resolve(s.local, i, "local"));
    } else if (!rangeFits(local->info.length, s.local.offset, s.local.length)) {
      return rangeError(i, "local", local->info, s.local.offset, s.local.length, "");
    }
    if (!region || region->info.id != s.remote.region) {
      KVX_ASSIGN_OR_RETURN(region, remote->resolve(s.remote, i, "remote"));
    } else if (!rangeFits(region->info.length, s.remote.offset, s.remote.length)) {
      return rangeError(i, "remote", region->info, s.remote.offset, s.remote.length,
                        " of peer '" + remote->name() + "'");
    }
    KVX_ASSIGN_OR_RETURN(const DataPath path, paths.of(i, *local, *region));
    builder.add(local, s.local.offset, region, s.remote.offset, s.local.length, path);
  }
  return addTransfer(std::move(remote), request.op, std::move(builder).finish(),
                     request.notification);
}

Result<ListId> Engine::prepareLocalList(std::span<const MemoryRange> ranges) {
  auto list = std::make_shared<PreparedList>();
  list->local.reserve(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    KVX_ASSIGN_OR_RETURN(auto region, registry_->resolve(ranges[i], i, "local"));
    list->local.push_back(LocalListEntry{std::move(region), ranges[i].offset, ranges[i].length});
  }
  sync::MutexLock lock(mutex_);
  const ListId id(nextListId_++);
  lists_.emplace(id, std::move(list));
  return id;
}

Result<ListId> Engine::prepareRemoteList(const std::string& peerName,
                                         std::span<const MemoryRange> ranges) {
  auto list = std::make_shared<PreparedList>();
  KVX_ASSIGN_OR_RETURN(list->peer, peer(peerName));
  list->remote.reserve(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    KVX_ASSIGN_OR_RETURN(auto region, list->peer->resolve(ranges[i], i, "remote"));
    // Remote GPU memory this side cannot reach is refused now rather than by every transfer
    // made from the list (its key could not be unpacked either).
    if (chooseDataPath(MemoryKind::kHost, region->info.kind, !region->packedKey.empty(),
                       gpuReach_.cudaDirect,
                       list->peer->stagingWindow() != nullptr) == DataPath::kNeedsTargetStaging) {
      return targetStagingRefused(i, region->info, peerName, gpuReach_);
    }
    list->remote.push_back(RemoteListEntry{std::move(region), ranges[i].offset, ranges[i].length});
  }
  // Transfers from the list then start at full speed: no key to unpack, no page to map.
  std::vector<std::shared_ptr<RemoteRegion>> regions;
  for (const RemoteListEntry& entry : list->remote) {
    if (std::find(regions.begin(), regions.end(), entry.region) == regions.end()) {
      // A region without a key is reached through the peer's staging window only.
      if (!entry.region->packedKey.empty()) regions.push_back(entry.region);
    }
  }
  KVX_RETURN_IF_ERROR(list->peer->unpackKeys(regions).withContext(
      "preparing a list of " + std::to_string(ranges.size()) + " descriptors on peer '" + peerName +
      "'"));
  sync::MutexLock lock(mutex_);
  const ListId id(nextListId_++);
  lists_.emplace(id, std::move(list));
  return id;
}

Result<std::shared_ptr<PreparedList>> Engine::findList(ListId id) const {
  sync::MutexLock lock(mutex_);
  auto it = lists_.find(id);
  if (it == lists_.end())
    return notFound("prepared list " + std::to_string(id.value) + " does not exist");
  return it->second;
}

Result<TransferId> Engine::makeTransfer(TransferOp op, ListId localList,
                                        std::span<const std::uint32_t> localIndices,
                                        ListId remoteList,
                                        std::span<const std::uint32_t> remoteIndices,
                                        std::optional<std::string> notification) {
  KVX_ASSIGN_OR_RETURN(auto local, findList(localList));
  KVX_ASSIGN_OR_RETURN(auto remote, findList(remoteList));
  if (local->isRemote() || !remote->isRemote()) {
    return invalidArgument("makeTransfer needs a local list then a remote list");
  }
  if (localIndices.size() != remoteIndices.size() || localIndices.empty()) {
    return invalidArgument("makeTransfer got " + std::to_string(localIndices.size()) +
                           " local and " + std::to_string(remoteIndices.size()) +
                           " remote indices; they must be equal and non-zero");
  }
  PlanBuilder builder(options_.maxOpBytes, localIndices.size());
  PairPaths paths(gpuReach_, remote->peer->name(), remote->peer->stagingWindow() != nullptr);
  for (std::size_t i = 0; i < localIndices.size(); ++i) {
    const std::uint32_t li = localIndices[i];
    const std::uint32_t ri = remoteIndices[i];
    if (li >= local->local.size() || ri >= remote->remote.size()) {
      return invalidArgument("pair " + std::to_string(i) + ": index " + std::to_string(li) + "/" +
                             std::to_string(ri) + " is outside the lists (" +
                             std::to_string(local->local.size()) + "/" +
                             std::to_string(remote->remote.size()) + " entries)");
    }
    const LocalListEntry& l = local->local[li];
    const RemoteListEntry& r = remote->remote[ri];
    if (l.length != r.length) return invalidArgument(mismatch(i, l.length, r.length));
    KVX_ASSIGN_OR_RETURN(const DataPath path, paths.of(i, *l.region, *r.region));
    builder.add(l.region, l.offset, r.region, r.offset, l.length, path);
  }
  return addTransfer(remote->peer, op, std::move(builder).finish(), std::move(notification));
}

Status Engine::releaseList(ListId id) {
  sync::MutexLock lock(mutex_);
  if (lists_.erase(id) == 0) {
    return notFound("prepared list " + std::to_string(id.value) + " does not exist");
  }
  return Status::ok();
}

Status Engine::post(TransferId id, Transfer::FinishedCallback onFinished) {
  KVX_ASSIGN_OR_RETURN(auto transfer, transfers_.find(id));
  KVX_RETURN_IF_ERROR(transfer->start(*registry_, std::move(onFinished)));
  kick();
  return Status::ok();
}

TransferStatus Engine::poll(TransferId id) const {
  auto transfer = transfers_.find(id);
  if (!transfer.isOk()) return TransferStatus{TransferState::kFailed, transfer.status()};
  return (*transfer)->status();
}

Status Engine::wait(TransferId id, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(auto transfer, transfers_.find(id));
  waitFinished(*transfer, deadline);
  const TransferStatus s = transfer->status();
  switch (s.state) {
    case TransferState::kDone: return Status::ok();
    case TransferState::kFailed: return s.status;
    case TransferState::kIdle:
      return failedPrecondition("transfer " + std::to_string(id.value) + " was never posted");
    case TransferState::kPending: break;
  }
  return timedOut("transfer " + std::to_string(id.value) + " to '" + transfer->peerName() +
                  "' still pending at the deadline");
}

Result<TransferStats> Engine::stats(TransferId id) const {
  KVX_ASSIGN_OR_RETURN(auto transfer, transfers_.find(id));
  return transfer->stats();
}

Status Engine::release(TransferId id) {
  KVX_ASSIGN_OR_RETURN(auto transfer, transfers_.find(id));
  if (transfer->pending()) KVX_RETURN_IF_ERROR(cancel(id));
  return transfers_.erase(id);
}

}  // namespace kvx::engine
