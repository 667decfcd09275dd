#include "engine/transfer/list_table.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sync/process_counter.h"

namespace kvx::engine {
namespace {

Status unknownList(ListId id) {
  return notFound("prepared list " + std::to_string(id.value) + " does not exist");
}

}  // namespace

Result<ListId> ListTable::prepareLocal(std::span<const MemoryRange> ranges) {
  auto list = std::make_shared<PreparedList>();
  list->local.reserve(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    KVX_ASSIGN_OR_RETURN(auto region, registry_.resolve(ranges[i], i, "local"));
    list->local.push_back(LocalListEntry{std::move(region), ranges[i].offset, ranges[i].length});
  }
  return add(std::move(list));
}

Result<ListId> ListTable::prepareRemote(std::shared_ptr<RemotePeer> peer,
                                        std::span<const MemoryRange> ranges) {
  auto list = std::make_shared<PreparedList>();
  list->peer = std::move(peer);
  const std::string& peerName = list->peer->name();
  list->remote.reserve(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    KVX_ASSIGN_OR_RETURN(auto region, list->peer->resolve(ranges[i], i, "remote"));
    // Remote GPU memory this side cannot reach is refused now rather than by every transfer
    // made from the list (its key could not be unpacked either).
    if (chooseDataPath(MemoryKind::kHost, region->info.kind, !region->packedKey.empty(),
                       reach_.cudaDirect,
                       list->peer->stagingWindow() != nullptr) == DataPath::kNeedsTargetStaging) {
      return targetStagingRefused(i, region->info, peerName, reach_);
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
  return add(std::move(list));
}

Result<std::shared_ptr<PreparedList>> ListTable::find(ListId id) const {
  sync::MutexLock lock(mutex_);
  auto it = lists_.find(id);
  if (it == lists_.end()) return unknownList(id);
  return it->second;
}

Status ListTable::release(ListId id) {
  sync::MutexLock lock(mutex_);
  if (lists_.erase(id) == 0) return unknownList(id);
  return Status::ok();
}

void ListTable::clear() {
  std::unordered_map<ListId, std::shared_ptr<PreparedList>> lists;
  sync::MutexLock lock(mutex_);
  lists.swap(lists_);
}

ListId ListTable::add(std::shared_ptr<PreparedList> list) {
  sync::MutexLock lock(mutex_);
  const ListId id(sync::nextInProcess<ListId>());
  lists_.emplace(id, std::move(list));
  return id;
}

}  // namespace kvx::engine
