#include "agent/channel/messages/rejoin.h"

#include <nlohmann/json.hpp>
#include <string>

#include "json/json_reader.h"

namespace kvx::agent::channel {

nlohmann::json Rejoin::toJson() const { return nlohmann::json::object(); }

Result<Rejoin> Rejoin::fromJson(const nlohmann::json& value) {
  KVX_RETURN_IF_ERROR(jsonio::JsonReader::object(value, std::string(toString(kType))).status());
  return Rejoin{};
}

nlohmann::json RejoinAck::toJson() const { return nlohmann::json::object(); }

Result<RejoinAck> RejoinAck::fromJson(const nlohmann::json& value) {
  KVX_RETURN_IF_ERROR(jsonio::JsonReader::object(value, std::string(toString(kType))).status());
  return RejoinAck{};
}

}  // namespace kvx::agent::channel
