#include "agent/channel/messages/message.h"

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "json/json_reader.h"

namespace kvx::agent::channel {
namespace {

template <typename T>
Result<Message> decodeAs(const Frame& frame) {
  KVX_ASSIGN_OR_RETURN(
      nlohmann::json value,
      jsonio::parseJson(frame.payload, std::string(toString(T::kType)) + " payload"));
  KVX_ASSIGN_OR_RETURN(T message, T::fromJson(value));
  return Message(std::move(message));
}

}  // namespace

MessageType messageType(const Message& message) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kType; }, message);
}

std::vector<std::uint8_t> encodeMessage(const Message& message) {
  const std::string payload =
      std::visit([](const auto& m) { return jsonio::dumpJson(m.toJson()); }, message);
  return encodeFrame(messageType(message), payload);
}

Result<Message> decodeMessage(const Frame& frame) {
  try {
    const auto type = parseMessageType(frame.type);
    if (!type) {
      return protocolError("unknown message type " + std::to_string(frame.type) + " (" +
                           std::to_string(frame.payload.size()) + "-byte payload)");
    }
    switch (*type) {
      case MessageType::kHello: return decodeAs<Hello>(frame);
      case MessageType::kHelloAck: return decodeAs<HelloAck>(frame);
      case MessageType::kMetadataUpdate: return decodeAs<MetadataUpdate>(frame);
      case MessageType::kErrorMessage: return decodeAs<ErrorMessage>(frame);
      case MessageType::kGoodbye: return decodeAs<Goodbye>(frame);
      case MessageType::kHeartbeat: return decodeAs<Heartbeat>(frame);
      case MessageType::kAuthBegin: return decodeAs<AuthBegin>(frame);
      case MessageType::kAuthChallenge: return decodeAs<AuthChallenge>(frame);
      case MessageType::kAuthResponse: return decodeAs<AuthResponse>(frame);
      case MessageType::kRejoin: return decodeAs<Rejoin>(frame);
      case MessageType::kRejoinAck: return decodeAs<RejoinAck>(frame);
      case MessageType::kMetadataBlob: break;
    }
    return protocolError("frame type " + std::to_string(frame.type) + " (" +
                         std::string(toString(*type)) + ") is not a channel message");
  } catch (const std::exception& e) {
    return protocolError(std::string("unexpected error decoding frame type ") +
                         std::to_string(frame.type) + ": " + e.what());
  }
}

}  // namespace kvx::agent::channel
