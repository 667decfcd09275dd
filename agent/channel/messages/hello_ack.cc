#include "agent/channel/messages/hello_ack.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "agent/channel/messages/heartbeat.h"
#include "agent/metadata/metadata_codec.h"
#include "json/json_reader.h"

namespace kvx::agent::channel {

nlohmann::json HelloAck::toJson() const {
  nlohmann::json value = {{"metadata", agent::metadata::metadataToJson(metadata)}};
  if (peerTimeoutMs) value["peerTimeoutMs"] = *peerTimeoutMs;
  if (knewYou) value["knewYou"] = *knewYou;
  return value;
}

Result<HelloAck> HelloAck::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader field, reader.child("metadata"));
  HelloAck message;
  KVX_ASSIGN_OR_RETURN(message.metadata,
                       agent::metadata::metadataFromJson(field.value(), field.path()));
  KVX_ASSIGN_OR_RETURN(
      message.peerTimeoutMs,
      reader.optionalUnsignedInteger("peerTimeoutMs", kMinPeerTimeoutMs, kMaxPeerTimeoutMs));
  KVX_ASSIGN_OR_RETURN(message.knewYou, reader.optionalBoolean("knewYou"));
  return message;
}

}  // namespace kvx::agent::channel
