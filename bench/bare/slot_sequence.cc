#include "bench/bare/slot_sequence.h"

namespace kvx::bench {
namespace {

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t x = (state += 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

SlotSequence::SlotSequence(SlotPattern pattern, std::uint64_t slotCount, std::uint32_t segments,
                           std::uint64_t seed)
    : pattern_(pattern),
      slotCount_(slotCount),
      segments_(segments),
      groups_(slotCount / segments),
      state_(seed) {}

void SlotSequence::next(std::span<std::uint64_t> out) {
  if (pattern_ == SlotPattern::kContiguous) {
    const std::uint64_t base = (request_ % groups_) * segments_;
    for (std::uint32_t i = 0; i < segments_; ++i) out[i] = base + i;
  } else {
    // The modulo bias is below slotCount / 2^64: irrelevant here.
    for (std::uint32_t i = 0; i < segments_; ++i) out[i] = splitmix(state_) % slotCount_;
  }
  ++request_;
}

}  // namespace kvx::bench
