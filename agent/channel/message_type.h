#pragma once

// The message types of the control-channel protocol: the u16 "type" field of every frame.
// Values are part of the wire format; never renumber them, only add new ones.

#include <cstdint>
#include <optional>
#include <string_view>

namespace kvx::agent::channel {

enum class MessageType : std::uint16_t {
  kHello = 1,           // client -> server, first frame on a connection
  kHelloAck = 2,        // server -> client, accepts the hello
  kMetadataUpdate = 3,  // either way, after the handshake
  kErrorMessage = 4,    // either way; the sender closes the connection after it
  kGoodbye = 5,         // either way; orderly close
  kHeartbeat = 6,       // either way, to a peer that announced a peer timeout
  kAuthBegin = 7,       // client -> server, first frame when the client holds a token
  kAuthChallenge = 8,   // server -> client, answers auth_begin
  kAuthResponse = 9,    // client -> server, answers auth_challenge; hello follows
  kRejoin = 10,         // client -> server, after a hello_ack that knew the client (rejoin.h)
  kRejoinAck = 11,      // server -> client, answers rejoin
  // Not a channel message: the type of the frame that wraps an exported metadata blob.
  kMetadataBlob = 0x100,
};

// The name used in logs and as the root of field paths in errors ("hello.metadata.name").
constexpr std::string_view toString(MessageType type) {
  switch (type) {
    case MessageType::kHello: return "hello";
    case MessageType::kHelloAck: return "hello_ack";
    case MessageType::kMetadataUpdate: return "metadata_update";
    case MessageType::kErrorMessage: return "error";
    case MessageType::kGoodbye: return "goodbye";
    case MessageType::kHeartbeat: return "heartbeat";
    case MessageType::kAuthBegin: return "auth_begin";
    case MessageType::kAuthChallenge: return "auth_challenge";
    case MessageType::kAuthResponse: return "auth_response";
    case MessageType::kRejoin: return "rejoin";
    case MessageType::kRejoinAck: return "rejoin_ack";
    case MessageType::kMetadataBlob: return "metadata_blob";
  }
  return "unknown";
}

// The message type for a raw frame type, or nullopt when this agent does not know it.
constexpr std::optional<MessageType> parseMessageType(std::uint16_t raw) {
  switch (static_cast<MessageType>(raw)) {
    case MessageType::kHello:
    case MessageType::kHelloAck:
    case MessageType::kMetadataUpdate:
    case MessageType::kErrorMessage:
    case MessageType::kGoodbye:
    case MessageType::kHeartbeat:
    case MessageType::kAuthBegin:
    case MessageType::kAuthChallenge:
    case MessageType::kAuthResponse:
    case MessageType::kRejoin:
    case MessageType::kRejoinAck:
    case MessageType::kMetadataBlob: return static_cast<MessageType>(raw);
  }
  return std::nullopt;
}

}  // namespace kvx::agent::channel
