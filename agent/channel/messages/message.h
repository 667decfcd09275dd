#pragma once

// Message: any control-channel message, and its conversion to and from frames. This is the
// one place that maps a frame type to a message struct: an unknown type is rejected here.
// Stateless and thread-safe.

#include <cstdint>
#include <variant>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/messages/auth_begin.h"
#include "agent/channel/messages/auth_challenge.h"
#include "agent/channel/messages/auth_response.h"
#include "agent/channel/messages/error_message.h"
#include "agent/channel/messages/goodbye.h"
#include "agent/channel/messages/heartbeat.h"
#include "agent/channel/messages/hello.h"
#include "agent/channel/messages/hello_ack.h"
#include "agent/channel/messages/metadata_update.h"
#include "agent/channel/messages/rejoin.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

using Message = std::variant<Hello, HelloAck, MetadataUpdate, ErrorMessage, Goodbye, Heartbeat,
                             AuthBegin, AuthChallenge, AuthResponse, Rejoin, RejoinAck>;

MessageType messageType(const Message& message);

// The frame bytes for `message` (header + compact JSON).
std::vector<std::uint8_t> encodeMessage(const Message& message);

// Parses and checks the frame's payload as the message its type names. PROTOCOL_ERROR for an
// unknown type, a payload that is not JSON or nests too deeply, or any field violation.
Result<Message> decodeMessage(const Frame& frame);

}  // namespace kvx::agent::channel
