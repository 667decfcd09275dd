#include "engine/transfer/transfer_plan.h"

#include <algorithm>

namespace kvx::engine {

PlanBuilder::PlanBuilder(std::uint64_t maxOpBytes, std::size_t expectedSegments)
    : maxOpBytes_(maxOpBytes == 0 ? UINT64_MAX : maxOpBytes) {
  plan_.ops.reserve(expectedSegments);
}

void PlanBuilder::noteLocal(const std::shared_ptr<LocalRegion>& local) {
  if (local.get() == lastLocal_) return;
  lastLocal_ = local.get();
  for (const auto& known : plan_.localRegions) {
    if (known == local) return;
  }
  plan_.localRegions.push_back(local);
}

void PlanBuilder::noteStaged(const LocalRegion& local) {
  if (&local == lastStaged_) return;
  lastStaged_ = &local;
  std::vector<std::string>& names = plan_.stagedRegions;
  if (std::find(names.begin(), names.end(), local.info.name) == names.end()) {
    names.push_back(local.info.name);
  }
}

std::uint32_t PlanBuilder::remoteSlot(const std::shared_ptr<RemoteRegion>& remote) {
  if (remote.get() == lastRemote_) return lastRemoteSlot_;
  lastRemote_ = remote.get();
  for (std::uint32_t i = 0; i < plan_.remoteRegions.size(); ++i) {
    if (plan_.remoteRegions[i] == remote) return lastRemoteSlot_ = i;
  }
  plan_.remoteRegions.push_back(remote);
  return lastRemoteSlot_ = static_cast<std::uint32_t>(plan_.remoteRegions.size() - 1);
}

void PlanBuilder::add(const std::shared_ptr<LocalRegion>& local, std::uint64_t localOffset,
                      const std::shared_ptr<RemoteRegion>& remote, std::uint64_t remoteOffset,
                      std::uint64_t length, DataPath path) {
  noteLocal(local);
  const std::uint32_t slot = remoteSlot(remote);
  std::uint8_t* localAddress = local->base() + localOffset;
  std::uint64_t remoteAddress = remote->info.address + remoteOffset;
  ++plan_.descriptors;
  plan_.bytes += length;
  std::vector<PlannedOp>& ops = path == DataPath::kStagedLocal    ? plan_.stagedOps
                                : path == DataPath::kStagedRemote ? plan_.remoteStagedOps
                                : path == DataPath::kStagedBoth   ? plan_.bothStagedOps
                                                                  : plan_.ops;
  if (path == DataPath::kStagedLocal || path == DataPath::kStagedBoth) {
    plan_.stagedBytes += length;
    plan_.stagedDevice = local->info.device;
    noteStaged(*local);
  }
  if (stagedRemotely(path)) plan_.remoteStagedBytes += length;

  while (length > 0) {
    PlannedOp* last = ops.empty() ? nullptr : &ops.back();
    const bool continues = last != nullptr && last->localMemory == local->memory.get() &&
                           last->local + last->length == localAddress && last->remoteSlot == slot &&
                           last->remoteAddress + last->length == remoteAddress &&
                           last->length < maxOpBytes_;
    std::uint64_t take;
    if (continues) {
      take = std::min(length, maxOpBytes_ - last->length);
      last->length += take;
    } else {
      take = std::min(length, maxOpBytes_);
      ops.push_back(PlannedOp{localAddress, local->memory.get(), remoteAddress, slot, take});
    }
    localAddress += take;
    remoteAddress += take;
    length -= take;
  }
}

TransferPlan PlanBuilder::finish() && { return std::move(plan_); }

std::string describeStagedSource(const TransferPlan& plan) {
  std::string names;
  for (const std::string& name : plan.stagedRegions) {
    names += (names.empty() ? "'" : ", '") + name + "'";
  }
  return std::string(plan.stagedRegions.size() == 1 ? "GPU region " : "GPU regions ") + names +
         " on CUDA device " + std::to_string(plan.stagedDevice);
}

}  // namespace kvx::engine
