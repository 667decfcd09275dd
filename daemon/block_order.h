#pragma once

// The order in which a prefill agent hands a request's source blocks to submit()
// (--block-order). "contiguous" keeps the allocator's order: blocks allocated as one extent
// stay adjacent in token order, and the engine coalesces their segments into few operations.
// "random" shuffles them (seeded, so a replay is repeatable) and then makes sure that no
// token block's successor is the next block of the pool, so that no two segments coalesce:
// the worst case for the data path. Pure functions; safe from any thread.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kvx::daemon {

enum class BlockOrder : std::uint8_t { kContiguous, kRandom };
std::optional<BlockOrder> parseBlockOrder(std::string_view text);  // "contiguous", "random"

// Reorders `blocks` (distinct pool blocks) as `order` says; `seed` picks the shuffle.
// kRandom guarantees blocks[i + 1] != blocks[i] + 1 for every i.
void applyBlockOrder(BlockOrder order, std::uint64_t seed, std::vector<std::uint64_t>& blocks);

}  // namespace kvx::daemon
