#pragma once

// How a transfer is described and what state it can be in.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/ids.h"
#include "kvx/memory.h"
#include "kvx/status.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

enum class TransferOp : std::uint8_t {
  kRead = 0,   // pull: remote -> local
  kWrite = 1,  // push: local -> remote
};

std::string_view toString(TransferOp op);

// One (local range) <-> (remote range) pair. Both lengths must be equal; they are kept
// separately so that a mismatch is reported rather than silently truncated.
struct TransferSegment {
  MemoryRange local;
  MemoryRange remote;  // region ids are the peer's, as listed in its metadata
};

struct TransferRequest {
  std::string peer;  // the peer agent's name
  TransferOp op = TransferOp::kWrite;
  std::vector<TransferSegment> segments;
  std::optional<std::string> notification;  // delivered after all data is in place
};

enum class TransferState : std::uint8_t {
  kIdle = 0,     // created, never posted
  kPending = 1,  // posted, not finished
  kDone = 2,     // every byte is in place (and the notification, if any, was sent)
  kFailed = 3,   // see the status
};

std::string_view toString(TransferState state);

struct TransferStatus {
  TransferState state = TransferState::kIdle;
  Status status;  // why it failed; OK otherwise
};

// What a transfer turned into after planning: how many descriptors the caller gave and how
// many operations go on the wire after coalescing. Operations on GPU memory that the
// transport cannot move are staged through host buffers on this side, and operations on the
// peer's GPU memory that its transport cannot move go through the peer's staging window: they
// are counted in `operations` and `bytes` too, and again in the staged fields (the rest went
// direct; GPU to GPU without GPUDirect counts in both staged pairs).
struct TransferStats {
  std::uint64_t descriptors = 0;
  std::uint64_t operations = 0;
  std::uint64_t bytes = 0;
  std::uint64_t stagedOperations = 0;  // staged through host buffers on this side
  std::uint64_t stagedBytes = 0;
  std::uint64_t remoteStagedOperations = 0;  // staged through the peer's staging window
  std::uint64_t remoteStagedBytes = 0;
};

// A notification received from a peer.
struct Notification {
  std::string peer;
  std::string payload;
};

// Called when a posted transfer finishes (see Agent::post).
using TransferCallback = std::function<void(TransferId, const TransferStatus&)>;
// Receives notifications instead of the queue (see Agent::setNotificationHandler).
using NotificationHandler = std::function<void(Notification)>;

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadlineIn(std::chrono::milliseconds timeout) { return Clock::now() + timeout; }

}  // namespace kvx
#pragma GCC visibility pop
