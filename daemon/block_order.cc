#include "daemon/block_order.h"

#include <algorithm>
#include <random>
#include <utility>

namespace kvx::daemon {

std::optional<BlockOrder> parseBlockOrder(std::string_view text) {
  if (text == "contiguous") return BlockOrder::kContiguous;
  if (text == "random") return BlockOrder::kRandom;
  return std::nullopt;
}

void applyBlockOrder(BlockOrder order, std::uint64_t seed, std::vector<std::uint64_t>& blocks) {
  if (order == BlockOrder::kContiguous) return;
  std::mt19937_64 random(seed);
  std::shuffle(blocks.begin(), blocks.end(), random);
  // A pair that would coalesce (b, b + 1) becomes (b + 1, b). That cannot make the pair
  // before it or after it coalesce: it would take a block equal to b or b + 1, and the blocks
  // are distinct. One pass from the front therefore leaves no such pair.
  for (std::size_t i = 0; i + 1 < blocks.size(); ++i) {
    if (blocks[i + 1] == blocks[i] + 1) std::swap(blocks[i], blocks[i + 1]);
  }
}

}  // namespace kvx::daemon
