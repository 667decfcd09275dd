#include "kv/placement/prefix_memory.h"

namespace kvx::kv::placement {

void PrefixMemory::remember(std::span<const std::uint64_t> hashes) {
  if (capacity_ == 0) return;
  for (auto h = hashes.rbegin(); h != hashes.rend(); ++h) {
    const std::uint64_t hash = *h;
    auto it = index_.find(hash);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      continue;
    }
    if (index_.size() == capacity_) {
      index_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(hash);
    index_.emplace(hash, order_.begin());
  }
}

void PrefixMemory::forget(std::span<const std::uint64_t> hashes) {
  for (std::uint64_t hash : hashes) {
    auto it = index_.find(hash);
    if (it == index_.end()) continue;
    order_.erase(it->second);
    index_.erase(it);
  }
}

std::size_t PrefixMemory::leadingMatches(std::span<const std::uint64_t> hashes) const {
  std::size_t matched = 0;
  while (matched < hashes.size() && contains(hashes[matched])) ++matched;
  return matched;
}

}  // namespace kvx::kv::placement
