#include "kv/pool/prefix_cache.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>

namespace kvx::kv {
namespace {

std::string idText(std::uint64_t hashId) { return "prefix chunk " + std::to_string(hashId); }

}  // namespace

std::size_t PrefixCache::matchPrefix(std::span<const std::uint64_t> hashIds) const {
  std::size_t n = 0;
  while (n < hashIds.size() && chunks_.contains(hashIds[n])) ++n;
  return n;
}

Result<std::vector<BlockExtent>> PrefixCache::acquire(std::span<const std::uint64_t> hashIds) {
  for (std::uint64_t id : hashIds) {
    if (!chunks_.contains(id)) {
      return notFound(idText(id) + " is not cached; acquire only what matchPrefix() found");
    }
  }
  std::vector<BlockExtent> out;
  for (std::uint64_t id : hashIds) {
    Chunk& chunk = chunks_.at(id);
    if (chunk.pins++ == 0) {
      lru_.erase(chunk.lruPos);
      pinnedBlocks_ += chunk.blocks;
      ++pinnedChunks_;
    }
    out.insert(out.end(), chunk.extents.begin(), chunk.extents.end());
  }
  return out;
}

Status PrefixCache::release(std::span<const std::uint64_t> hashIds) {
  // Count per id first so that an id listed more often than it is pinned fails whole.
  std::unordered_map<std::uint64_t, std::uint64_t> wanted;
  for (std::uint64_t id : hashIds) {
    auto it = chunks_.find(id);
    if (it == chunks_.end())
      return invalidArgument("cannot release " + idText(id) + ": not cached");
    if (++wanted[id] > it->second.pins) {
      return invalidArgument("cannot release " + idText(id) + ": it has " +
                             std::to_string(it->second.pins) + " pins, released " +
                             std::to_string(wanted[id]) + " times");
    }
  }
  for (std::uint64_t id : hashIds) {
    Chunk& chunk = chunks_.at(id);
    if (--chunk.pins == 0) {
      chunk.lruPos = lru_.insert(lru_.end(), id);
      pinnedBlocks_ -= chunk.blocks;
      --pinnedChunks_;
    }
  }
  return Status::ok();
}

Result<bool> PrefixCache::insert(std::uint64_t hashId, std::vector<BlockExtent> extents,
                                 std::vector<BlockExtent>& evictedOut) {
  if (chunks_.contains(hashId)) return false;
  KVX_RETURN_IF_ERROR(validateNewExtents(hashId, extents));
  const std::uint64_t blocks = totalBlocks(extents);
  // Only unpinned chunks can make room; refuse before evicting anything in vain.
  if (blocks > capacityBlocks_ - pinnedBlocks_) return false;
  while (cachedBlocks_ + blocks > capacityBlocks_) evictOne(evictedOut);

  for (const BlockExtent& e : extents) owners_.emplace(e.first, std::pair(e.count, hashId));
  Chunk& chunk = chunks_[hashId];
  chunk.extents = std::move(extents);
  chunk.blocks = blocks;
  chunk.lruPos = lru_.insert(lru_.end(), hashId);
  cachedBlocks_ += blocks;
  return true;
}

std::vector<BlockExtent> PrefixCache::evict(std::uint64_t blocksWanted) {
  std::vector<BlockExtent> out;
  std::uint64_t evicted = 0;
  while (evicted < blocksWanted && !lru_.empty()) {
    const std::uint64_t before = cachedBlocks_;
    evictOne(out);
    evicted += before - cachedBlocks_;
  }
  return out;
}

std::vector<BlockExtent> PrefixCache::evictAll() {
  return evict(std::numeric_limits<std::uint64_t>::max());
}

Status PrefixCache::validateNewExtents(std::uint64_t hashId,
                                       std::span<const BlockExtent> extents) const {
  const std::string what = "cannot cache " + idText(hashId) + ": ";
  if (extents.empty()) return invalidArgument(what + "it has no blocks");
  for (const BlockExtent& e : extents) {
    if (e.count == 0 || e.end() < e.first) {
      return invalidArgument(what + "extent at block " + std::to_string(e.first) + " with count " +
                             std::to_string(e.count) + " is empty or wraps");
    }
    auto next = owners_.upper_bound(e.first);
    if (next != owners_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second.first > e.first) {
        return invalidArgument(what + "block " + std::to_string(e.first) +
                               " is already cached in " + idText(prev->second.second));
      }
    }
    if (next != owners_.end() && next->first < e.end()) {
      return invalidArgument(what + "block " + std::to_string(next->first) +
                             " is already cached in " + idText(next->second.second));
    }
  }
  std::vector<BlockExtent> sorted(extents.begin(), extents.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const BlockExtent& a, const BlockExtent& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first < sorted[i - 1].end()) {
      return invalidArgument(what + "block " + std::to_string(sorted[i].first) +
                             " appears twice in its extents");
    }
  }
  return Status::ok();
}

void PrefixCache::evictOne(std::vector<BlockExtent>& out) {
  const std::uint64_t id = lru_.front();
  lru_.pop_front();
  auto it = chunks_.find(id);
  for (const BlockExtent& e : it->second.extents) {
    owners_.erase(e.first);
    out.push_back(e);
  }
  cachedBlocks_ -= it->second.blocks;
  chunks_.erase(it);
}

}  // namespace kvx::kv
