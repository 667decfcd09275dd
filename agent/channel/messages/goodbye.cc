#include "agent/channel/messages/goodbye.h"

#include <nlohmann/json.hpp>

#include "agent/channel/json_reader.h"

namespace kvx::agent::channel {

nlohmann::json Goodbye::toJson() const {
  // A reason from a local Status may be longer than a peer would accept: cut it here.
  return {{"reason", utf8Prefix(reason, kMaxReasonBytes)}};
}

Result<Goodbye> Goodbye::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(JsonReader reader, JsonReader::object(value, std::string(toString(kType))));
  Goodbye message;
  KVX_ASSIGN_OR_RETURN(message.reason, reader.string("reason", kMaxReasonBytes));
  return message;
}

}  // namespace kvx::agent::channel
