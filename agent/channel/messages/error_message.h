#pragma once

// ErrorMessage: why the sender is about to close the connection (a rejected hello, a
// malformed frame). Carries a kvx::Status across the wire: the code by name
// ("ALREADY_EXISTS") and the message.

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "agent/channel/message_type.h"
#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::agent::channel {

struct ErrorMessage {
  static constexpr MessageType kType = MessageType::kErrorMessage;
  static constexpr std::size_t kMaxCodeBytes = 32;
  static constexpr std::size_t kMaxMessageBytes = 4096;

  std::string code;     // a StatusCode name, [A-Z_]; unknown names are accepted
  std::string message;  // at most kMaxMessageBytes

  // REQUIRES: !status.isOk(). Cuts the message to kMaxMessageBytes of valid UTF-8 (utf8Prefix).
  static ErrorMessage fromStatus(const Status& status);
  // The Status the peer reported, "<context>: <message>"; an unknown or OK code becomes
  // PEER_FAILED.
  Status toStatus(std::string_view context) const;

  nlohmann::json toJson() const;
  static Result<ErrorMessage> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel
