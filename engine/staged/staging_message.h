#pragma once

// The messages of target-side staging, carried as data-path messages (kinds 2 and 3 of
// notification_header.h) beside notifications. An initiator that moves bytes to or from a
// peer's GPU region the peer's transport cannot reach goes through the peer's staging window
// (staging_window.h), one slot at a time. A slot carries one or more ranges of the peer's GPU
// regions, packed back to back from the slot's start (small operations share a slot instead
// of costing two round trips each):
//   WRITE: kWrite (ranges)   -> kGranted (slot)
//          put into the slot, flush, kCopyIn (slot) -> kCopied   (bytes are in the device)
//   READ:  kRead (ranges)    -> kReady (slot)    (bytes are in the slot)
//          get from the slot, kRelease (slot)
// kRelease also gives back a granted slot the initiator no longer needs (cancel). Any
// request may be answered kFailed with a status code and message instead.
//
// Layout (little-endian), payload of the message:
//   request: u8 version (2), u8 op, u16 zero, u32 slot, u64 request id, u32 range count,
//            u32 zero, then per range: u64 region id, u64 offset, u64 length
//            (kWrite and kRead: 1 to kMaxStagingRanges ranges of non-zero length;
//             kCopyIn and kRelease: none, the slot's lease says what it holds)
//   reply:   u8 version (2), u8 kind, u16 zero, u32 slot, u64 request id,
//            u32 status code, u32 message length, message bytes (at most 4 KiB)
// Decoders check the version, the sizes, the enums, the range count against the op and that
// reserved bytes are zero (and that only a failure carries a status); the meaning (bounds,
// the sum against a slot, slot ownership) is the window's to check. Version 1 (one range per
// request) is refused with a message naming both versions.
//
// Thread safety: pure functions.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvx/result.h"

namespace kvx::engine {

enum class StagingOp : std::uint8_t {
  kWrite = 1,    // grant a slot for a chunk bound for (region, offset, length)
  kCopyIn = 2,   // copy granted `slot` to its (region, offset, length)
  kRead = 3,     // copy (region, offset, length) to a slot
  kRelease = 4,  // the initiator is done with `slot`
};

enum class StagingReplyKind : std::uint8_t {
  kGranted = 1,  // put the chunk into `slot`
  kCopied = 2,   // the chunk is in device memory; the slot is free again
  kReady = 3,    // the chunk is in `slot`; get it, then release the slot
  kFailed = 4,   // the request failed: `status`
};

// Ranges one request may carry at most.
constexpr std::size_t kMaxStagingRanges = 1024;

// A range of one of the peer's GPU regions.
struct StagingRange {
  std::uint64_t region = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

struct StagingRequest {
  StagingOp op = StagingOp::kWrite;
  std::uint32_t slot = 0;
  std::uint64_t requestId = 0;
  std::vector<StagingRange> ranges;  // kWrite, kRead: in slot order; kCopyIn, kRelease: none

  // The bytes the ranges add up to (what the slot holds).
  std::uint64_t bytes() const;
};

struct StagingReply {
  StagingReplyKind kind = StagingReplyKind::kGranted;
  std::uint32_t slot = 0;
  std::uint64_t requestId = 0;
  Status status;  // kFailed only
};

std::string_view toString(StagingOp op);

std::vector<std::uint8_t> encodeStagingRequest(const StagingRequest& request);
Result<StagingRequest> decodeStagingRequest(std::span<const std::uint8_t> payload);

std::vector<std::uint8_t> encodeStagingReply(const StagingReply& reply);
Result<StagingReply> decodeStagingReply(std::span<const std::uint8_t> payload);

}  // namespace kvx::engine
