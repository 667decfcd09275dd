#pragma once

// The KV hand-off protocol between a prefill and a decode agent. Messages travel as kvx
// notifications (UCX active messages on the data endpoint, so a message sent after a
// transfer's data arrives after that data), as JSON objects with a type field "t":
//
//   hello      both ways   role, pool description, free blocks, the sender's session;
//                          reply=false opens
//   place      P -> D      request id, tokens, blocks, prefix hashes, mode, layer-wise,
//                          lease, (PULL) the source blocks, and for a sliced or gathered
//                          request the head slice, the decode-side id and the part count
//   placed     D -> P      destination blocks, prefix blocks reused, free blocks
//   refused    D -> P      code, message, retryable, free blocks
//   data       P -> D      PUSH: layer L (or all: -1) of the request is in place
//   ready      P -> D      PULL: layer L (or all: -1) may be read now
//   confirm    D -> P      every block of the request is in place
//   abort      both ways   the sender gave up on the request (code, message)
//   abortAck   both ways   the receiver stopped touching the request's blocks
//   capacity   D -> P      free blocks changed
//
// Decoding checks every field (PROTOCOL_ERROR naming it); unknown fields are ignored.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kv/pool/block_extent.h"
#include "kv/pool/pool_description.h"
#include "kvx/kv_types.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

using kv::BlockExtent;

inline constexpr std::int64_t kAllLayers = -1;

struct HelloMsg {
  KvRole role = KvRole::kPrefill;
  kv::PoolDescription pool;
  std::uint64_t freeBlocks = 0;
  bool reply = false;
  // The sender's default direction: tells the other side which pool it will address, so
  // that only the initiating side readies the other's memory ahead of the first request.
  KvMode mode = KvMode::kPush;
  // The sender's KV session with the receiver: the same number for as long as the sender
  // keeps the session (its requests with the receiver), a new one once it has ended it. A
  // hello with another number than the last one tells the receiver that the sender dropped
  // every request of the old session, even when no link was seen to close. 0: not said
  // (older agents).
  std::uint64_t session = 0;
};
struct PlaceMsg {
  std::string req;
  std::uint64_t tokens = 0;
  std::uint64_t blocks = 0;
  std::vector<std::uint64_t> prefixHashes;
  KvMode mode = KvMode::kPush;
  bool layerwise = false;
  std::uint64_t leaseMs = 0;
  std::vector<BlockExtent> sourceBlocks;  // PULL only
  // Tensor-parallel slicing (see KvSlice): heads [srcHeadFirst, +headCount) of the prefill
  // pool into [dstHeadFirst, +headCount) of the decode pool (headCount 0: whole segments),
  // as one of `parts` parts of the decode-side request `group` (empty: req).
  std::uint32_t srcHeadFirst = 0;
  std::uint32_t dstHeadFirst = 0;
  std::uint32_t headCount = 0;
  std::string group;
  std::uint32_t parts = 1;

  const std::string& groupId() const { return group.empty() ? req : group; }
};
struct PlacedMsg {
  std::string req;
  std::vector<BlockExtent> blocks;
  std::uint64_t prefixBlocks = 0;
  std::uint64_t freeBlocks = 0;
};
struct RefusedMsg {
  std::string req;
  Status why;
  bool retryable = false;
  std::uint64_t freeBlocks = 0;
};
struct DataMsg {
  std::string req;
  std::int64_t layer = kAllLayers;
};
struct ReadyMsg {
  std::string req;
  std::int64_t layer = kAllLayers;
};
struct ConfirmMsg {
  std::string req;
  std::uint64_t freeBlocks = 0;
  std::uint64_t descriptors = 0;  // PULL: what the decode side's reads turned into
  std::uint64_t operations = 0;
};
struct AbortMsg {
  std::string req;
  Status why;
};
struct AbortAckMsg {
  std::string req;
  std::uint64_t freeBlocks = 0;
};
struct CapacityMsg {
  std::uint64_t freeBlocks = 0;
};

using KvMessage = std::variant<HelloMsg, PlaceMsg, PlacedMsg, RefusedMsg, DataMsg, ReadyMsg,
                               ConfirmMsg, AbortMsg, AbortAckMsg, CapacityMsg>;

std::string encode(const KvMessage& message);
Result<KvMessage> decode(std::string_view text);

// Request ids are at most this long; messages at most kMaxMessageBytes.
inline constexpr std::size_t kMaxRequestIdBytes = 256;
inline constexpr std::size_t kMaxMessageBytes = 1 << 20;
// A gather has at most this many parts (prefill ranks).
inline constexpr std::uint32_t kMaxGatherParts = 1024;

// A request id must be 1 to kMaxRequestIdBytes bytes of valid UTF-8 (it travels in JSON,
// which would otherwise alter it). INVALID_ARGUMENT says which rule it breaks.
Status checkRequestId(std::string_view id);

}  // namespace kvx::kv::handoff
