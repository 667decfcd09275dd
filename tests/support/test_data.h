#pragma once

// Deterministic test data: fill a buffer from a seed and verify it byte for byte.

#include <cstdint>
#include <span>
#include <string>

namespace kvx::test {

// Fills `bytes` with a pseudo-random pattern that depends on `seed` and on each byte's
// position, so that misplaced bytes are caught as well as wrong ones.
void fillPattern(std::span<std::uint8_t> bytes, std::uint64_t seed);

// Returns an empty string when `bytes` holds fillPattern(seed); otherwise a message naming
// the first mismatching offset with the expected and actual values.
std::string checkPattern(std::span<const std::uint8_t> bytes, std::uint64_t seed);

// FNV-1a over the bytes: a per-block checksum for multi-process tests.
std::uint64_t checksum(std::span<const std::uint8_t> bytes);

}  // namespace kvx::test
