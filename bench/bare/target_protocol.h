#pragma once

// The messages the bare reference's two processes exchange over their PipeChannel:
//   target -> initiator  kHello    what the initiator needs to reach the target's buffer
//   initiator -> target  kConnect  the initiator's worker address: the target opens an
//                                  endpoint back, as a kvx agent holds one to each peer
//   target -> initiator  kConnected
//   initiator -> target  kStart    the measured part begins (target notes its CPU time)
//   target -> initiator  kStarted  acknowledges kStart
//   initiator -> target  kStop     the measured part is over; u64: notifications sent. The
//                                  target progresses until all of them are in (AMs on one
//                                  lane may still be in flight: put completion is local)
//   target -> initiator  kReport   CPU time, buffer checksum, notification timestamps
//   initiator -> target  kBye      the initiator closed its endpoint (gracefully, which needs
//                                  the target's progress until then); the target exits
//   target -> initiator  kError    the target failed: a text, then it exits
// Payloads are u64 fields and u64-length-prefixed byte strings in host byte order (the two
// ends are the same binary on the same machine).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvx/result.h"

namespace kvx::bench {

// The UCP active-message id of the notifications the initiator sends the target.
inline constexpr unsigned kNotifyAmId = 7;
// With --fixed-overhead the target answers each notification with an AM of this id (8-byte
// header: the request id) on its endpoint back, and the initiator posts the next request only
// once the previous one is acknowledged. Without that pacing the initiator, whose put and AM
// complete locally at once on shared memory, runs ahead of the target, and the receiver
// latency measures the backlog in the target's queue instead of one request's trip.
inline constexpr unsigned kAckAmId = 8;

enum class TargetMessage : std::uint32_t {
  kHello = 1,
  kStart = 2,
  kStarted = 3,
  kStop = 4,
  kReport = 5,
  kError = 6,
  kBye = 7,
  kConnect = 8,
  kConnected = 9,
};

struct TargetHello {
  std::vector<std::uint8_t> workerAddress;  // ucp_worker_get_address
  std::vector<std::uint8_t> packedKey;      // ucp_rkey_pack of the buffer
  std::uint64_t bufferAddress = 0;          // base address in the target's address space
  std::uint64_t bufferBytes = 0;
};

struct Notification {
  std::uint64_t requestId = 0;
  std::int64_t receivedNs = 0;  // CLOCK_MONOTONIC when the AM handler ran
};

struct TargetReport {
  std::uint64_t cpuNs = 0;                  // getrusage user+sys between kStart and kStop
  std::uint64_t checksum = 0;               // bufferChecksum of the whole buffer after kStop
  std::vector<Notification> notifications;  // every AM received, warm-up included
};

std::vector<std::uint8_t> encode(const TargetHello& hello);
std::vector<std::uint8_t> encode(const TargetReport& report);
std::vector<std::uint8_t> encodeStop(std::uint64_t notificationsSent);
// PROTOCOL_ERROR naming the field when the bytes are truncated or inconsistent.
Result<TargetHello> decodeHello(std::span<const std::uint8_t> bytes);
Result<TargetReport> decodeReport(std::span<const std::uint8_t> bytes);
Result<std::uint64_t> decodeStop(std::span<const std::uint8_t> bytes);

}  // namespace kvx::bench
