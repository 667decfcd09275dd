#include "examples/pair_transfer/pattern.h"

#include <cstring>
#include <sstream>

namespace pair_transfer {
namespace {

std::uint64_t word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + index;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint8_t byteAt(std::uint64_t seed, std::uint64_t offset) {
  return static_cast<std::uint8_t>(word(seed, offset / 8) >> (8 * (offset % 8)));
}

}  // namespace

void fillPattern(std::span<std::uint8_t> bytes, std::uint64_t firstOffset, std::uint64_t seed) {
  std::uint64_t i = 0;
  // Unaligned head byte by byte, then whole words.
  for (; i < bytes.size() && (firstOffset + i) % 8 != 0; ++i)
    bytes[i] = byteAt(seed, firstOffset + i);
  for (; i + 8 <= bytes.size(); i += 8) {
    const std::uint64_t w = word(seed, (firstOffset + i) / 8);
    std::memcpy(bytes.data() + i, &w, 8);
  }
  for (; i < bytes.size(); ++i) bytes[i] = byteAt(seed, firstOffset + i);
}

std::string checkPattern(std::span<const std::uint8_t> bytes, std::uint64_t firstOffset,
                         std::uint64_t seed) {
  std::uint64_t i = 0;
  for (; i < bytes.size() && (firstOffset + i) % 8 != 0; ++i) {
    if (bytes[i] != byteAt(seed, firstOffset + i)) break;
  }
  if (i == bytes.size() || (firstOffset + i) % 8 == 0) {
    for (; i + 8 <= bytes.size(); i += 8) {
      const std::uint64_t w = word(seed, (firstOffset + i) / 8);
      if (std::memcmp(bytes.data() + i, &w, 8) != 0) break;
    }
  }
  for (; i < bytes.size(); ++i) {
    const std::uint8_t expected = byteAt(seed, firstOffset + i);
    if (bytes[i] != expected) {
      std::ostringstream out;
      out << "byte at offset " << firstOffset + i << " is " << int{bytes[i]} << ", expected "
          << int{expected};
      return out.str();
    }
  }
  return {};
}

std::optional<Command> parseCommand(const std::string& text) {
  std::istringstream in(text);
  Command c;
  if (!(in >> c.verb)) return std::nullopt;
  if (c.verb == "exit") return c;
  if ((c.verb != "fill" && c.verb != "check") || !(in >> c.offset >> c.length >> c.seed)) {
    return std::nullopt;
  }
  return c;
}

std::string formatCommand(const Command& c) {
  if (c.verb == "exit") return c.verb;
  return c.verb + " " + std::to_string(c.offset) + " " + std::to_string(c.length) + " " +
         std::to_string(c.seed);
}

Reply parseReply(const std::string& text) {
  const auto bar = text.find(" | ");
  if (bar == std::string::npos) return Reply{text, {}};
  return Reply{text.substr(0, bar), text.substr(bar + 3)};
}

}  // namespace pair_transfer
