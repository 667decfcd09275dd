#pragma once

// HeadSlice: which KV heads of a segment a move touches, for tensor-parallel slicing: heads
// [localFirst, localFirst + count) of this pool's segments pair with heads [remoteFirst,
// remoteFirst + count) of the peer's. count 0 means whole segments (both pools then have the
// same number of heads). Plain data.

#include <cstdint>
#include <string>

namespace kvx::kv {

struct HeadSlice {
  std::uint32_t localFirst = 0;
  std::uint32_t remoteFirst = 0;
  std::uint32_t count = 0;

  bool whole() const { return count == 0; }
  // The same slice seen from the peer.
  HeadSlice reversed() const { return HeadSlice{remoteFirst, localFirst, count}; }
  // "heads [2, 4) -> [0, 2)"; "whole segments" when whole().
  std::string toString() const;

  friend bool operator==(const HeadSlice&, const HeadSlice&) = default;
};

}  // namespace kvx::kv
