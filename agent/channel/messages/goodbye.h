#pragma once

// Goodbye: an orderly close. The sender closes the connection after it; the receiver treats
// the link as closed (not failed).

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "agent/channel/message_type.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct Goodbye {
  static constexpr MessageType kType = MessageType::kGoodbye;
  static constexpr std::size_t kMaxReasonBytes = 1024;

  std::string reason;  // free text for logs; at most kMaxReasonBytes

  nlohmann::json toJson() const;
  static Result<Goodbye> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel
