#include "engine/transfer/transfer_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "engine/transfer/pair_paths.h"
#include "engine/transfer/transfer_plan.h"

namespace kvx::engine {
namespace {

// How long a cancel then waits for the transfers whose links it reset to drain.
constexpr auto kDrainAfterReset = std::chrono::seconds(5);

std::string mismatch(std::size_t index, std::uint64_t local, std::uint64_t remote) {
  return "descriptor " + std::to_string(index) + ": local length " + std::to_string(local) +
         " differs from remote length " + std::to_string(remote);
}

std::string idList(const std::vector<std::shared_ptr<Transfer>>& transfers,
                   const RemotePeer* peer) {
  std::string ids;
  for (const auto& transfer : transfers) {
    if (peer != nullptr && transfer->peer().get() != peer) continue;
    ids += (ids.empty() ? "" : ", ") + std::to_string(transfer->id().value);
  }
  return ids;
}

}  // namespace

TransferService::TransferService(TransferServiceOptions options, MemoryRegistry& registry,
                                 PeerDirectory& peers, StagingAccess& staging, GpuReach reach,
                                 ProgressHooks progress)
    : options_(std::move(options)),
      registry_(registry),
      peers_(peers),
      staging_(staging),
      reach_(std::move(reach)),
      progress_(std::move(progress)),
      lists_(registry, reach_) {
  // Completions off the progress thread wake it; the caller that drives progress needs none.
  if (!progress_.callerDriven()) table_.setWake(progress_.kick);
}

Result<TransferId> TransferService::create(const TransferRequest& request) {
  if (request.segments.empty()) return invalidArgument("a transfer needs at least one descriptor");
  KVX_ASSIGN_OR_RETURN(auto remote, peers_.find(request.peer));
  PlanBuilder builder(options_.maxOpBytes, request.segments.size());
  PairPaths paths(reach_, remote->name(), remote->stagingWindow() != nullptr);
  std::shared_ptr<LocalRegion> local;
  std::shared_ptr<RemoteRegion> region;
  for (std::size_t i = 0; i < request.segments.size(); ++i) {
    const TransferSegment& s = request.segments[i];
    if (s.local.length != s.remote.length) {
      return invalidArgument(mismatch(i, s.local.length, s.remote.length));
    }
    // Consecutive descriptors usually name the same regions: look each up only on change.
    if (!local || local->info.id != s.local.region) {
      KVX_ASSIGN_OR_RETURN(local, registry_.resolve(s.local, i, "local"));
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
  return add(std::move(remote), request.op, std::move(builder).finish(), request.notification);
}

Result<ListId> TransferService::prepareLocalList(std::span<const MemoryRange> ranges) {
  return lists_.prepareLocal(ranges);
}

Result<ListId> TransferService::prepareRemoteList(const std::string& peer,
                                                  std::span<const MemoryRange> ranges) {
  KVX_ASSIGN_OR_RETURN(auto remote, peers_.find(peer));
  return lists_.prepareRemote(std::move(remote), ranges);
}

Result<TransferId> TransferService::make(TransferOp op, ListId localList,
                                         std::span<const std::uint32_t> localIndices,
                                         ListId remoteList,
                                         std::span<const std::uint32_t> remoteIndices,
                                         std::optional<std::string> notification) {
  KVX_ASSIGN_OR_RETURN(auto local, lists_.find(localList));
  KVX_ASSIGN_OR_RETURN(auto remote, lists_.find(remoteList));
  if (local->isRemote() || !remote->isRemote()) {
    return invalidArgument("makeTransfer needs a local list then a remote list; list " +
                           std::to_string(localList.value) + " is " +
                           (local->isRemote() ? "remote" : "local") + " and list " +
                           std::to_string(remoteList.value) + " is " +
                           (remote->isRemote() ? "remote" : "local"));
  }
  if (localIndices.size() != remoteIndices.size() || localIndices.empty()) {
    return invalidArgument("makeTransfer got " + std::to_string(localIndices.size()) +
                           " local and " + std::to_string(remoteIndices.size()) +
                           " remote indices; they must be equal and non-zero");
  }
  PlanBuilder builder(options_.maxOpBytes, localIndices.size());
  PairPaths paths(reach_, remote->peer->name(), remote->peer->stagingWindow() != nullptr);
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
  return add(remote->peer, op, std::move(builder).finish(), std::move(notification));
}

Status TransferService::releaseList(ListId list) { return lists_.release(list); }

Result<TransferId> TransferService::add(std::shared_ptr<RemotePeer> peer, TransferOp op,
                                        TransferPlan plan,
                                        std::optional<std::string> notification) {
  KVX_RETURN_IF_ERROR(staging_.prepare(plan));
  const TransferId id = table_.nextId();
  table_.insert(std::make_shared<Transfer>(id, std::move(peer), op, std::move(plan),
                                           options_.notificationHeader, std::move(notification),
                                           options_.maxOpsInFlight, table_, &staging_));
  return id;
}

Status TransferService::post(TransferId id, Transfer::FinishedCallback onFinished) {
  KVX_ASSIGN_OR_RETURN(auto transfer, table_.find(id));
  KVX_RETURN_IF_ERROR(transfer->start(registry_, std::move(onFinished)));
  progress_.kick();
  return Status::ok();
}

TransferStatus TransferService::poll(TransferId id) const {
  auto transfer = table_.find(id);
  if (!transfer.isOk()) return TransferStatus{TransferState::kFailed, transfer.status()};
  return (*transfer)->status();
}

Status TransferService::wait(TransferId id, Deadline deadline) {
  KVX_ASSIGN_OR_RETURN(auto transfer, table_.find(id));
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

Status TransferService::cancel(std::span<const TransferId> ids) {
  Status first;
  std::vector<std::shared_ptr<Transfer>> cancelling;
  for (const TransferId id : ids) {
    auto found = table_.find(id);
    if (!found.isOk()) {
      if (first.isOk()) first = found.status();
      continue;
    }
    std::shared_ptr<Transfer> transfer = std::move(found).value();
    if (!transfer->pending()) continue;
    transfer->requestCancel(cancelled("transfer " + std::to_string(id.value) + " was cancelled"));
    cancelling.push_back(std::move(transfer));
  }
  if (cancelling.empty()) return first;
  progress_.kick();
  // Every transfer stopped posting above; their operations in flight complete meanwhile.
  std::vector<std::shared_ptr<Transfer>> stuck =
      waitAllFinished(std::move(cancelling), Clock::now() + options_.cancelGrace);
  if (stuck.empty()) return first;
  // Operations already handed to the transport cannot be recalled one by one: close the
  // endpoint (which aborts them) and open a fresh one for the peer's other transfers. One
  // reset aborts every stuck transfer of that peer, so each peer is reset once.
  std::vector<const RemotePeer*> reset;
  for (const auto& transfer : stuck) {
    const RemotePeer* peer = transfer->peer().get();
    if (std::find(reset.begin(), reset.end(), peer) != reset.end()) continue;
    reset.push_back(peer);
    const std::string which = idList(stuck, peer);
    spdlog::warn(
        "{}: cancelled transfer(s) {} did not drain within {} ms; resetting the link to '{}'",
        options_.self, which, options_.cancelGrace.count(), transfer->peerName());
    // The close is bounded by one more grace: a close that would wait longer for the
    // transport fails what it has not reported with CANCELLED instead. The next link opens
    // off this path (LinkReopener); the peer's other transfers that the close interrupted
    // post again on it (Transfer).
    peers_.resetLink(transfer->peer(), "cancel of transfer(s) " + which,
                     Clock::now() + options_.cancelGrace);
  }
  progress_.kick();
  stuck = waitAllFinished(std::move(stuck), Clock::now() + kDrainAfterReset);
  if (!stuck.empty()) {
    // Worse than an unknown id: bytes of these may still land.
    first = internalError("transfer(s) " + idList(stuck, nullptr) +
                          " still have operations in flight after their endpoint was closed");
  }
  return first;
}

Result<TransferStats> TransferService::stats(TransferId id) const {
  KVX_ASSIGN_OR_RETURN(auto transfer, table_.find(id));
  return transfer->stats();
}

Status TransferService::release(TransferId id) {
  KVX_ASSIGN_OR_RETURN(auto transfer, table_.find(id));
  if (transfer->pending()) KVX_RETURN_IF_ERROR(cancel(std::span<const TransferId>(&id, 1)));
  return table_.erase(id);
}

void TransferService::failTransfersOf(const RemotePeer& peer, const Status& why) {
  cancelPending(why, &peer);
}

void TransferService::cancelAll(const Status& why) { cancelPending(why, nullptr); }

void TransferService::cancelPending(const Status& why, const RemotePeer* only) {
  for (auto& transfer : table_.all()) {
    if (only != nullptr && transfer->peer().get() != only) continue;
    if (transfer->pending()) transfer->requestCancel(why);
  }
}

void TransferService::waitAll(Deadline deadline) {
  const std::vector<std::shared_ptr<Transfer>> stuck = waitAllFinished(table_.all(), deadline);
  if (!stuck.empty()) {
    spdlog::warn("transfer(s) {} still pending at the deadline: their operations never completed",
                 idList(stuck, nullptr));
  }
}

void TransferService::clear() {
  lists_.clear();
  table_.pump();
  for (auto& transfer : table_.all()) table_.erase(transfer->id()).ignore();
}

void TransferService::waitFinished(const Transfer& transfer, Deadline deadline) {
  if (!progress_.callerDriven()) {
    table_.waitFinished(transfer, deadline);
    return;
  }
  while (transfer.pending() && Clock::now() < deadline) progress_.step();
}

std::vector<std::shared_ptr<Transfer>> TransferService::waitAllFinished(
    std::vector<std::shared_ptr<Transfer>> transfers, Deadline deadline) {
  // In order, against the one deadline: the set drains in parallel, so this costs the
  // slowest transfer's time, not the sum.
  for (const auto& transfer : transfers) waitFinished(*transfer, deadline);
  std::erase_if(transfers, [](const auto& transfer) { return !transfer->pending(); });
  return transfers;
}

}  // namespace kvx::engine
