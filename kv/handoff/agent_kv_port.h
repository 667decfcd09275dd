#pragma once

// AgentKvPort: KvPort on a kvx::Agent. One prepared descriptor list covers every segment of
// the local pool, and one per attached peer pool; a move of whole segments is a makeTransfer
// by index, which coalesces adjacent segments. A move of a head slice lists its strided
// pieces explicitly (createTransfer), since no prepared list holds them. Cancels run on a worker
// thread of their own, because a cancel may wait for the engine's grace period; the cancels
// queued meanwhile go to the agent as one batch, which shares that wait.
//
// Thread safety: send/attachPool/detachPool/move from one thread (the KV service thread);
// cancel from any thread.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kv/handoff/kv_port.h"
#include "kv/pool/kv_pool.h"
#include "kv/pool/slice_pairs.h"
#include "kvx/agent.h"
#include "sync/mutex.h"

namespace kvx::kv::handoff {

class AgentKvPort final : public KvPort {
 public:
  static Result<std::unique_ptr<AgentKvPort>> create(Agent& agent, const kv::KvPool& pool);
  ~AgentKvPort() override;

  Status send(const std::string& peer, const KvMessage& message) override;
  Status attachPool(const std::string& peer, const kv::PoolDescription& pool,
                    bool readyNow) override;
  void detachPool(const std::string& peer) override;
  Result<MoveId> move(const MoveSpec& spec, std::function<void(MoveResult)> onDone) override;
  void cancel(MoveId move) override;
  void disconnect(const std::string& peer, const Status& why) override;

  // CPU spent readying the pool of `peer` on the data path; 0 if not (yet) readied.
  // REQUIRES: the KV service thread.
  std::uint64_t readyCpuNs(const std::string& peer) const;
  // The same, summed over every peer ever readied. REQUIRES: the KV service thread.
  std::uint64_t readyCpuTotalNs() const { return readyCpuTotalNs_; }

 private:
  struct RemotePool {
    std::optional<ListId> list;  // prepared when first needed, or at once when asked
    kv::SegmentOrder order;
    kv::PoolLayout layout;
    kv::PoolDescription description;  // as the peer sent it (its regions: one per tensor)
    std::uint64_t readyCpuNs = 0;     // thread CPU that preparing `list` took
  };

  AgentKvPort(Agent& agent, const kv::KvPool& pool, ListId localList);
  // Prepares the engine list of every segment of the peer's pool (which readies its
  // memory on the data path) unless it is already prepared.
  Result<ListId> prepareRemote(const std::string& peer, RemotePool& remote);
  // Whole segments: a transfer by index into the prepared lists.
  Result<TransferId> makeWholeTransfer(const MoveSpec& spec, RemotePool& remote,
                                       std::optional<std::string> note);
  // A head slice: a transfer of explicit strided pieces.
  Result<TransferId> makeSlicedTransfer(const MoveSpec& spec, const RemotePool& remote,
                                        std::optional<std::string> note);
  void runCanceller();

  Agent& agent_;
  // Cleared on destruction: a move finishing later (the agent's own shutdown) then touches
  // neither the agent's tables nor the caller.
  std::shared_ptr<std::atomic<bool>> open_ = std::make_shared<std::atomic<bool>>(true);
  const kv::KvPool& pool_;
  const ListId localList_;
  std::unordered_map<std::string, RemotePool> remotes_;
  std::vector<RegionId> localRegions_;                       // one per tensor
  std::vector<std::uint32_t> localIndices_, remoteIndices_;  // reused per move
  std::vector<kv::RangePair> slicePairs_;                    // reused per sliced move
  std::uint64_t readyCpuTotalNs_ = 0;

  sync::Mutex cancelMutex_;
  std::condition_variable cancelWake_;
  std::deque<TransferId> cancels_ KVX_GUARDED_BY(cancelMutex_);
  bool stopping_ KVX_GUARDED_BY(cancelMutex_) = false;
  std::thread canceller_;
};

}  // namespace kvx::kv::handoff
