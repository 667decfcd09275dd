#pragma once

// The KV hand-off protocol between a prefill and a decode agent. Messages travel as kvx
// notifications (UCX active messages on the data endpoint, so a message sent after a
// transfer's data arrives after that data), as JSON objects with a type field "t":
//
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
// Decoding checks every field (PROTOCOL_ERROR naming it); unknown fields are ignored. There
// is no handshake message: the agents' own handshake carries each side's role and pool
// (kv_agent_info.h), and the decode side's first capacity message its free blocks.
//
// Each message is a struct of its own in kv/handoff/messages/, with its type name (kType)
// and the JSON form of its fields. This file is the protocol's entry point: it holds the
// protocol's limits and is the one place that maps the type field to a message. Stateless
// and thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "kv/handoff/messages/abort_ack_message.h"
#include "kv/handoff/messages/abort_message.h"
#include "kv/handoff/messages/capacity_message.h"
#include "kv/handoff/messages/confirm_message.h"
#include "kv/handoff/messages/data_message.h"
#include "kv/handoff/messages/message_fields.h"
#include "kv/handoff/messages/place_message.h"
#include "kv/handoff/messages/placed_message.h"
#include "kv/handoff/messages/ready_message.h"
#include "kv/handoff/messages/refused_message.h"
#include "kv/pool/block_extent.h"
#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::kv::handoff {

using kv::BlockExtent;

using KvMessage = std::variant<PlaceMsg, PlacedMsg, RefusedMsg, DataMsg, ReadyMsg, ConfirmMsg,
                               AbortMsg, AbortAckMsg, CapacityMsg>;

// The message as compact JSON, its type field "t" included.
std::string encode(const KvMessage& message);
// The message `text` holds. PROTOCOL_ERROR for text over kMaxMessageBytes, text that is not
// a JSON object, an unknown type, or the first field that is wrong.
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
