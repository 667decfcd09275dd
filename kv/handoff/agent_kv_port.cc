#include "kv/handoff/agent_kv_port.h"

#include <spdlog/spdlog.h>
#include <time.h>

namespace kvx::kv::handoff {
namespace {

std::uint64_t threadCpuNs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

}  // namespace

AgentKvPort::AgentKvPort(Agent& agent, const kv::KvPool& pool, ListId localList)
    : agent_(agent),
      pool_(pool),
      localList_(localList),
      localRegions_(pool.description().tensorRegions),
      canceller_([this] { runCanceller(); }) {}

Result<std::unique_ptr<AgentKvPort>> AgentKvPort::create(Agent& agent, const kv::KvPool& pool) {
  const std::vector<MemoryRange> ranges = pool.allSegmentRanges();
  KVX_ASSIGN_OR_RETURN(ListId list, agent.prepareLocalList(ranges));
  return std::unique_ptr<AgentKvPort>(new AgentKvPort(agent, pool, list));
}

AgentKvPort::~AgentKvPort() {
  open_->store(false);
  {
    sync::MutexLock lock(cancelMutex_);
    stopping_ = true;
  }
  cancelWake_.notify_all();
  canceller_.join();
  for (auto& [peer, remote] : remotes_) {
    if (remote.list) (void)agent_.releaseList(*remote.list);
  }
  (void)agent_.releaseList(localList_);
}

Status AgentKvPort::send(const std::string& peer, const KvMessage& message) {
  return agent_.sendNotification(peer, encode(message));
}

Status AgentKvPort::attachPool(const std::string& peer, const kv::PoolDescription& pool,
                               bool readyNow) {
  KVX_ASSIGN_OR_RETURN(kv::PoolLayout layout,
                       kv::PoolLayout::create(pool.shape, pool.layout, pool.blocks));
  detachPool(peer);
  RemotePool remote{
      std::nullopt,
      kv::SegmentOrder(pool.layout, pool.blocks, pool.shape.layers, pool.shape.kvCount()),
      std::move(layout), pool};
  if (readyNow) KVX_RETURN_IF_ERROR(prepareRemote(peer, remote).status());
  remotes_.emplace(peer, std::move(remote));
  return Status::ok();
}

Result<ListId> AgentKvPort::prepareRemote(const std::string& peer, RemotePool& remote) {
  if (remote.list) return *remote.list;
  const std::uint64_t cpuBefore = threadCpuNs();
  const std::vector<MemoryRange> ranges = kv::KvPool::allSegmentRanges(remote.description);
  KVX_ASSIGN_OR_RETURN(ListId list, agent_.prepareRemoteList(peer, ranges));
  remote.list = list;
  remote.readyCpuNs = threadCpuNs() - cpuBefore;
  readyCpuTotalNs_ += remote.readyCpuNs;
  spdlog::debug("the KV pool of '{}' is ready on the data path ({} us of CPU)", peer,
                remote.readyCpuNs / 1000);
  return list;
}

std::uint64_t AgentKvPort::readyCpuNs(const std::string& peer) const {
  auto it = remotes_.find(peer);
  return it == remotes_.end() ? 0 : it->second.readyCpuNs;
}

void AgentKvPort::detachPool(const std::string& peer) {
  auto it = remotes_.find(peer);
  if (it == remotes_.end()) return;
  if (it->second.list) (void)agent_.releaseList(*it->second.list);
  remotes_.erase(it);
}

Result<MoveId> AgentKvPort::move(const MoveSpec& spec, std::function<void(MoveResult)> onDone) {
  auto it = remotes_.find(spec.peer);
  if (it == remotes_.end()) return notFound("no KV pool of peer '" + spec.peer + "' is attached");
  RemotePool& remote = it->second;
  const kv::PoolLayout& local = pool_.layout();
  if (spec.localBlocks.size() != spec.remoteBlocks.size() || spec.localBlocks.empty()) {
    return invalidArgument("a move needs equal, non-empty block lists; got " +
                           std::to_string(spec.localBlocks.size()) + " and " +
                           std::to_string(spec.remoteBlocks.size()));
  }
  if (spec.firstLayer + std::uint64_t{spec.layerCount} > local.shape().layers ||
      spec.layerCount == 0) {
    return invalidArgument("layers [" + std::to_string(spec.firstLayer) + ", " +
                           std::to_string(spec.firstLayer + spec.layerCount) +
                           ") are outside the pool's " + std::to_string(local.shape().layers));
  }
  for (std::size_t i = 0; i < spec.localBlocks.size(); ++i) {
    if (spec.localBlocks[i] >= local.blocks() || spec.remoteBlocks[i] >= remote.layout.blocks()) {
      return invalidArgument("block pair " + std::to_string(i) + " (" +
                             std::to_string(spec.localBlocks[i]) + " -> " +
                             std::to_string(spec.remoteBlocks[i]) + ") is outside the pools (" +
                             std::to_string(local.blocks()) + " / " +
                             std::to_string(remote.layout.blocks()) + " blocks)");
    }
  }
  std::optional<std::string> note;
  if (spec.notification) note = encode(*spec.notification);
  KVX_ASSIGN_OR_RETURN(TransferId id, spec.heads.whole()
                                          ? makeWholeTransfer(spec, remote, std::move(note))
                                          : makeSlicedTransfer(spec, remote, std::move(note)));
  Agent& agent = agent_;
  Status posted = agent_.post(id, [&agent, open = open_, onDone = std::move(onDone)](
                                      TransferId transfer, const TransferStatus& status) {
    if (!open->load()) return;
    MoveResult result{status.status, agent.transferStats(transfer).valueOr(TransferStats{})};
    (void)agent.release(transfer);
    onDone(std::move(result));
  });
  if (!posted.isOk()) {
    (void)agent_.release(id);
    return posted;
  }
  return MoveId{id.value};
}

Result<TransferId> AgentKvPort::makeWholeTransfer(const MoveSpec& spec, RemotePool& remote,
                                                  std::optional<std::string> note) {
  if (pool_.layout().shape().kvHeads != remote.layout.shape().kvHeads) {
    return invalidArgument(
        "'" + spec.peer + "' holds " + std::to_string(remote.layout.shape().kvHeads) +
        " KV heads per block and this pool " + std::to_string(pool_.layout().shape().kvHeads) +
        ": only head slices move between them");
  }
  if (!remote.list) {
    spdlog::info("readying the KV pool of '{}' on the data path at its first move", spec.peer);
  }
  KVX_ASSIGN_OR_RETURN(ListId remoteList, prepareRemote(spec.peer, remote));
  localIndices_.clear();
  remoteIndices_.clear();
  pool_.order().appendPairs(remote.order, spec.localBlocks, spec.remoteBlocks, spec.firstLayer,
                            spec.layerCount, localIndices_, remoteIndices_);
  return agent_.makeTransfer(spec.op, localList_, localIndices_, remoteList, remoteIndices_,
                             std::move(note));
}

Result<TransferId> AgentKvPort::makeSlicedTransfer(const MoveSpec& spec, const RemotePool& remote,
                                                   std::optional<std::string> note) {
  slicePairs_.clear();
  KVX_RETURN_IF_ERROR(kv::appendSlicePairs(pool_.layout(), remote.layout, spec.localBlocks,
                                           spec.remoteBlocks, spec.firstLayer, spec.layerCount,
                                           spec.heads, slicePairs_));
  TransferRequest request;
  request.peer = spec.peer;
  request.op = spec.op;
  request.notification = std::move(note);
  request.segments.reserve(slicePairs_.size());
  for (const kv::RangePair& pair : slicePairs_) {
    request.segments.push_back(
        {{localRegions_[pair.local.tensor], pair.local.offset, pair.local.length},
         {remote.description.tensorRegions[pair.remote.tensor], pair.remote.offset,
          pair.remote.length}});
  }
  return agent_.createTransfer(request);
}

void AgentKvPort::cancel(MoveId move) {
  {
    sync::MutexLock lock(cancelMutex_);
    cancels_.push_back(TransferId(move));
  }
  cancelWake_.notify_one();
}

void AgentKvPort::runCanceller() {
  sync::UniqueLock lock(cancelMutex_);
  std::vector<TransferId> batch;
  while (true) {
    cancelWake_.wait(lock.native(),
                     [&]() KVX_REQUIRES(cancelMutex_) { return stopping_ || !cancels_.empty(); });
    if (stopping_) return;
    // Every cancel queued so far goes as one batch: moves that time out together (a peer
    // whose data stopped moving) then wait out one grace period and one link reset
    // between them, not one each in turn.
    batch.assign(cancels_.begin(), cancels_.end());
    cancels_.clear();
    lock.unlock();
    (void)agent_.cancel(batch);  // NOT_FOUND for moves that finished and were released: fine
    lock.lock();
  }
}

void AgentKvPort::disconnect(const std::string& peer, const Status& why) {
  detachPool(peer);
  Status done = agent_.disconnect(peer);
  if (!done.isOk() && done.code() != StatusCode::kNotFound) {
    spdlog::warn("disconnecting '{}' ({}): {}", peer, why.message(), done.toString());
  }
}

}  // namespace kvx::kv::handoff
