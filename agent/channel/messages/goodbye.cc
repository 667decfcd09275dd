#include "agent/channel/messages/goodbye.h"

#include <nlohmann/json.hpp>

#include "json/json_reader.h"

namespace kvx::agent::channel {

nlohmann::json Goodbye::toJson() const {
  // A reason from a local Status may be longer than a peer would accept: cut it here.
  return {{"reason", jsonio::utf8Prefix(reason, kMaxReasonBytes)}};
}

Result<Goodbye> Goodbye::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  Goodbye message;
  KVX_ASSIGN_OR_RETURN(message.reason, reader.string("reason", kMaxReasonBytes));
  return message;
}

}  // namespace kvx::agent::channel
