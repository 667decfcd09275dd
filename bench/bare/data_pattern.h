#pragma once

// The bytes the bare reference moves and how it proves they arrived. Each process fills its
// buffer with a pattern of 64-bit words derived from a seed and the word's index (the same
// index in both buffers, since a segment uses the same slot on both sides). After the run,
// a checksum of a whole buffer is compared with the checksum the buffer must have: slots
// that requests touched hold the source's pattern, every other byte its own.
//
// Pure functions; any thread.

#include <cstdint>
#include <vector>

namespace kvx::bench {

inline constexpr std::uint64_t kTargetSeed = 0x7a67;
inline constexpr std::uint64_t kInitiatorSeed = 0x1a17;

// The pattern word at word index `index` for `seed`.
std::uint64_t patternWord(std::uint64_t seed, std::uint64_t index);

// REQUIRES: bytes % 8 == 0, `base` 8-byte aligned.
void fillPattern(std::uint8_t* base, std::uint64_t bytes, std::uint64_t seed);

// An order-independent 64-bit checksum of the words of a buffer, position-sensitive.
// REQUIRES: bytes % 8 == 0, `base` 8-byte aligned.
std::uint64_t bufferChecksum(const std::uint8_t* base, std::uint64_t bytes);

// The checksum of a `bytes` buffer filled with `ownSeed` in which the segment slots marked in
// `touched` (slot i = [i * segmentBytes, (i + 1) * segmentBytes)) hold `sourceSeed`'s pattern.
// REQUIRES: segmentBytes % 8 == 0, touched.size() * segmentBytes <= bytes.
std::uint64_t expectedChecksum(std::uint64_t bytes, std::uint64_t segmentBytes,
                               const std::vector<std::uint8_t>& touched, std::uint64_t ownSeed,
                               std::uint64_t sourceSeed);

}  // namespace kvx::bench
