#pragma once

// KvPort: what the request state machines need from the data path: messages to a peer and
// block moves between this agent's pool and a peer's pool. The real port runs on
// kvx::Agent (agent_kv_port.h); tests script a fake one (delays, reordering, failures).
//
// Threads: every member is called from the KV service thread. `onDone` callbacks may run
// on any thread; the caller re-posts them to its service thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kv/handoff/kv_message.h"
#include "kv/pool/head_slice.h"
#include "kv/pool/pool_description.h"
#include "kvx/result.h"
#include "kvx/transfer.h"

namespace kvx::kv::handoff {

// What a finished move reports.
struct MoveResult {
  Status status;
  TransferStats stats;
};

// Identifies one move for cancel().
using MoveId = std::uint64_t;

// One move: layers [firstLayer, firstLayer + layerCount) of localBlocks[i] <->
// remoteBlocks[i], whole segments or the head slice `heads`. The spans must stay valid for
// the duration of the move() call only.
struct MoveSpec {
  std::string peer;
  TransferOp op = TransferOp::kWrite;
  std::span<const std::uint64_t> localBlocks;
  std::span<const std::uint64_t> remoteBlocks;
  std::uint32_t firstLayer = 0;
  std::uint32_t layerCount = 0;
  kv::HeadSlice heads;
  std::optional<KvMessage> notification;
};

class KvPort {
 public:
  virtual ~KvPort() = default;

  // Sends `message` to `peer`. Messages to one peer arrive in order, and a message sent
  // after a move to that peer finished arrives after the move's data.
  virtual Status send(const std::string& peer, const KvMessage& message) = 0;

  // Makes `pool` (the peer's) addressable by move(). Replaces an earlier one. With
  // `readyNow` (this side will initiate moves to or from it) the peer's memory is readied on
  // the data path at once; otherwise at the first move that needs it.
  virtual Status attachPool(const std::string& peer, const kv::PoolDescription& pool,
                            bool readyNow) = 0;
  virtual void detachPool(const std::string& peer) = 0;

  // Moves what `spec` says (kWrite: to the peer; kRead: from it). The notification, if any,
  // reaches the peer after the data. `onDone` runs exactly once unless this returns an error.
  virtual Result<MoveId> move(const MoveSpec& spec, std::function<void(MoveResult)> onDone) = 0;

  // Asks a move to stop; its onDone still runs (with an error) once it has drained.
  // Does not block the caller.
  virtual void cancel(MoveId move) = 0;

  // Cuts the data path to `peer` (its in-flight moves fail and no byte of theirs lands
  // afterwards); the peer then leaves (for AgentKvPort: the agent's departure event). For a
  // peer that stopped answering the hand-off protocol.
  virtual void disconnect(const std::string& peer, const Status& why) = 0;
};

}  // namespace kvx::kv::handoff
