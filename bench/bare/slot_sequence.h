#pragma once

// SlotSequence: which segment slots each request of the bare reference uses. Contiguous:
// request j uses the K adjacent slots of group j mod (slots / K). Random: each of the K
// segments is a slot drawn uniformly (with replacement) from the whole buffer, from a
// seeded generator, so runs are repeatable.
//
// One owner thread.

#include <cstdint>
#include <span>

#include "bench/bare/bare_ucp_options.h"

namespace kvx::bench {

class SlotSequence {
 public:
  // REQUIRES: slotCount >= segments >= 1.
  SlotSequence(SlotPattern pattern, std::uint64_t slotCount, std::uint32_t segments,
               std::uint64_t seed);

  // Writes the next request's slots. REQUIRES: out.size() == segments.
  void next(std::span<std::uint64_t> out);

 private:
  SlotPattern pattern_;
  std::uint64_t slotCount_;
  std::uint32_t segments_;
  std::uint64_t groups_;
  std::uint64_t request_ = 0;
  std::uint64_t state_;
};

}  // namespace kvx::bench
