#pragma once

// Address ranges as the engine checks and prints them. A leaf: the registry and the
// transports both use it.

#include <cstdint>
#include <string>

namespace kvx::engine {

// "[0x7f00+65536)": a range as error messages show it.
std::string describeRange(std::uint64_t address, std::uint64_t length);

// True if [offset, offset + length) is a non-empty range inside a region of `regionLength`.
inline bool rangeFits(std::uint64_t regionLength, std::uint64_t offset, std::uint64_t length) {
  return length != 0 && offset <= regionLength && length <= regionLength - offset;
}

// True if [address, address + length) is a non-empty range inside
// [regionAddress, regionAddress + regionLength).
inline bool rangeWithin(std::uint64_t regionAddress, std::uint64_t regionLength,
                        std::uint64_t address, std::uint64_t length) {
  return address >= regionAddress && rangeFits(regionLength, address - regionAddress, length);
}

}  // namespace kvx::engine
