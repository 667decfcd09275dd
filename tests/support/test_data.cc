#include "tests/support/test_data.h"

#include <cstring>
#include <sstream>

namespace kvx::test {
namespace {

// splitmix64: a cheap, well-mixed function of (seed, word index).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint8_t patternByte(std::uint64_t seed, std::uint64_t offset) {
  const std::uint64_t word = mix(seed * 0x100000001b3ULL + offset / 8);
  return static_cast<std::uint8_t>(word >> ((offset % 8) * 8));
}

}  // namespace

void fillPattern(std::span<std::uint8_t> bytes, std::uint64_t seed) {
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const std::uint64_t word = mix(seed * 0x100000001b3ULL + i / 8);
    std::memcpy(bytes.data() + i, &word, 8);
  }
  for (; i < bytes.size(); ++i) bytes[i] = patternByte(seed, i);
}

std::string checkPattern(std::span<const std::uint8_t> bytes, std::uint64_t seed) {
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const std::uint64_t word = mix(seed * 0x100000001b3ULL + i / 8);
    if (std::memcmp(bytes.data() + i, &word, 8) != 0) break;
  }
  for (; i < bytes.size(); ++i) {
    const std::uint8_t expected = patternByte(seed, i);
    if (bytes[i] != expected) {
      std::ostringstream out;
      out << "byte " << i << " of " << bytes.size() << " is " << int{bytes[i]} << ", expected "
          << int{expected} << " (seed " << seed << ")";
      return out.str();
    }
  }
  return {};
}

std::uint64_t checksum(std::span<const std::uint8_t> bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::uint8_t b : bytes) {
    hash ^= b;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace kvx::test
