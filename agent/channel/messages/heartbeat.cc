#include "agent/channel/messages/heartbeat.h"

#include <nlohmann/json.hpp>
#include <string>

#include "json/json_reader.h"

namespace kvx::agent::channel {

nlohmann::json Heartbeat::toJson() const { return nlohmann::json::object(); }

Result<Heartbeat> Heartbeat::fromJson(const nlohmann::json& value) {
  KVX_RETURN_IF_ERROR(jsonio::JsonReader::object(value, std::string(toString(kType))).status());
  return Heartbeat{};
}

}  // namespace kvx::agent::channel
