#pragma once

// PrefixMemory: the prefix hash ids that one placement scheduler believes reside on one
// decode peer, because it placed requests carrying them there. A bounded LRU set: when full,
// remembering a new id forgets the least recently remembered one. Lookups do not refresh
// recency (they are const), only remember() does.
//
// The ids follow the trace convention: hash id i identifies the whole prefix up to and
// including chunk i, so a request reuses the leading run of its ids that the peer holds.
//
// Not thread-safe; owned by its PlacementScheduler.

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>

namespace kvx::kv::placement {

class PrefixMemory {
 public:
  // capacity 0 remembers nothing.
  explicit PrefixMemory(std::size_t capacity) : capacity_(capacity) {}

  PrefixMemory(const PrefixMemory&) = delete;
  PrefixMemory& operator=(const PrefixMemory&) = delete;
  PrefixMemory(PrefixMemory&&) = default;
  PrefixMemory& operator=(PrefixMemory&&) = default;

  // Marks every id in `hashes` as most recently used, evicting the least recently used ids
  // beyond capacity. The first id ends up the newest: leading ids are shared by the most
  // requests, and a match is worthless without them.
  void remember(std::span<const std::uint64_t> hashes);

  bool contains(std::uint64_t hash) const { return index_.count(hash) != 0; }
  // Forgets `hashes` (the peer turned out not to hold them).
  void forget(std::span<const std::uint64_t> hashes);

  // How many leading ids of `hashes` are remembered (stops at the first unknown one).
  std::size_t leadingMatches(std::span<const std::uint64_t> hashes) const;

  std::size_t size() const { return index_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t capacity_;
  std::list<std::uint64_t> order_;  // front: most recently remembered
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> index_;
};

}  // namespace kvx::kv::placement
