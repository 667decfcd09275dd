#pragma once

// The frame around every blob this backend hands to a peer (worker addresses, remote keys):
//   u32 magic | u16 version | u32 body length | body | u64 FNV-1a of everything before.
// UCX parses its own addresses and packed keys without a length and trusts them; checking
// the frame first turns a corrupted, truncated or foreign blob from a peer into an
// INVALID_ARGUMENT instead of a crash inside UCX. Native byte order, like UCX's own blobs.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kvx/result.h"

namespace kvx::engine::ucx {

inline constexpr std::uint32_t kAddressMagic = 0x4158564b;    // the bytes "KVXA" (little-endian)
inline constexpr std::uint32_t kRemoteKeyMagic = 0x5258564b;  // the bytes "KVXR"

std::vector<std::uint8_t> frame(std::uint32_t magic, std::span<const std::uint8_t> body);

// The body of a well-formed frame with `magic`; INVALID_ARGUMENT naming `what` otherwise.
Result<std::span<const std::uint8_t>> unframe(std::uint32_t magic,
                                              std::span<const std::uint8_t> framed,
                                              std::string_view what);

// UCX parses addresses and packed keys without a length. What kvx hands it is a copy of the
// body followed by kUcxReadPad zero bytes, in kvx-ucx-probe and in the agent alike
// (ucx_peer_probe.h): a blob shorter than what UCX reads then reads the same zeros in both
// processes, not whatever memory happens to follow it, so the probe's verdict holds here.
inline constexpr std::size_t kUcxReadPad = 4096;
std::vector<std::uint8_t> paddedForUcx(std::span<const std::uint8_t> body);

}  // namespace kvx::engine::ucx
