#pragma once

// ListTable: the descriptor lists one engine prepared, by id. Preparing resolves every
// range once (its region looked up, its bounds checked) and, for a remote list, refuses GPU
// memory this side cannot reach and unpacks the keys of its regions on the peer's current
// link, so that transfers made from the list later start at full speed.
//
// Owner: TransferService. Threads: any thread may call any member. Lock: mutex_, a leaf,
// guards the table only; preparing runs outside it.

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

#include "engine/memory/memory_registry.h"
#include "engine/peer/remote_peer.h"
#include "engine/transfer/data_path.h"
#include "engine/transfer/prepared_list.h"
#include "kvx/memory.h"
#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::engine {

class ListTable {
 public:
  // REQUIRES: `registry` outlives the table.
  ListTable(MemoryRegistry& registry, GpuReach reach) : registry_(registry), reach_(reach) {}

  // Engine::prepareLocalList; prepareRemoteList for the peer found by that name.
  Result<ListId> prepareLocal(std::span<const MemoryRange> ranges) KVX_EXCLUDES(mutex_);
  Result<ListId> prepareRemote(std::shared_ptr<RemotePeer> peer,
                               std::span<const MemoryRange> ranges) KVX_EXCLUDES(mutex_);
  // NOT_FOUND for a list that was never prepared or was released.
  Result<std::shared_ptr<PreparedList>> find(ListId id) const KVX_EXCLUDES(mutex_);
  Status release(ListId id) KVX_EXCLUDES(mutex_);
  void clear() KVX_EXCLUDES(mutex_);

 private:
  ListId add(std::shared_ptr<PreparedList> list) KVX_EXCLUDES(mutex_);

  MemoryRegistry& registry_;
  const GpuReach reach_;

  mutable sync::Mutex mutex_;
  std::unordered_map<ListId, std::shared_ptr<PreparedList>> lists_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine
