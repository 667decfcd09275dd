#pragma once

// nextInProcess<Tag>(): numbers from 1 that no other caller in this process gets for the same
// Tag, never reused: the ids an agent hands out (regions, lists, transfers) are unique among
// all the agents of a process, so that one agent's id given to another is NOT_FOUND there,
// never one of its own. Thread-safe (an atomic counter per Tag).

#include <atomic>
#include <cstdint>

namespace kvx::sync {

template <typename Tag>
std::uint64_t nextInProcess() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace kvx::sync
