#include "bench/bare/data_pattern.h"

#include <cstring>

namespace kvx::bench {
namespace {

// splitmix64's finaliser: a bijection that spreads every input bit over the output.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// A word's contribution to the checksum depends on its value and its position.
std::uint64_t term(std::uint64_t word, std::uint64_t index) {
  return mix(word ^ (index * kGolden));
}

}  // namespace

std::uint64_t patternWord(std::uint64_t seed, std::uint64_t index) {
  return mix(seed * kGolden + index);
}

void fillPattern(std::uint8_t* base, std::uint64_t bytes, std::uint64_t seed) {
  for (std::uint64_t i = 0; i < bytes / 8; ++i) {
    const std::uint64_t word = patternWord(seed, i);
    std::memcpy(base + i * 8, &word, 8);
  }
}

std::uint64_t bufferChecksum(const std::uint8_t* base, std::uint64_t bytes) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < bytes / 8; ++i) {
    std::uint64_t word = 0;
    std::memcpy(&word, base + i * 8, 8);
    sum += term(word, i);
  }
  return sum;
}

std::uint64_t expectedChecksum(std::uint64_t bytes, std::uint64_t segmentBytes,
                               const std::vector<std::uint8_t>& touched, std::uint64_t ownSeed,
                               std::uint64_t sourceSeed) {
  const std::uint64_t wordsPerSlot = segmentBytes / 8;
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < bytes / 8; ++i) {
    const std::uint64_t slot = i / wordsPerSlot;
    const bool fromSource = slot < touched.size() && touched[slot] != 0;
    sum += term(patternWord(fromSource ? sourceSeed : ownSeed, i), i);
  }
  return sum;
}

}  // namespace kvx::bench
