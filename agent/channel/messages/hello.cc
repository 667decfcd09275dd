#include "agent/channel/messages/hello.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "agent/channel/messages/heartbeat.h"
#include "agent/metadata/metadata_codec.h"
#include "json/json_reader.h"

namespace kvx::agent::channel {

nlohmann::json Hello::toJson() const {
  nlohmann::json value = {{"metadata", agent::metadata::metadataToJson(metadata)}};
  if (role) value["role"] = *role;
  if (peerTimeoutMs) value["peerTimeoutMs"] = *peerTimeoutMs;
  return value;
}

Result<Hello> Hello::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader field, reader.child("metadata"));
  Hello message;
  KVX_ASSIGN_OR_RETURN(message.metadata,
                       agent::metadata::metadataFromJson(field.value(), field.path()));
  KVX_ASSIGN_OR_RETURN(message.role, reader.optionalString("role", kMaxRoleBytes));
  KVX_ASSIGN_OR_RETURN(
      message.peerTimeoutMs,
      reader.optionalUnsignedInteger("peerTimeoutMs", kMinPeerTimeoutMs, kMaxPeerTimeoutMs));
  if (message.role) {
    for (char c : *message.role) {
      const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
      if (!ok) {
        return jsonio::fieldError(reader.fieldPath("role"), "[A-Za-z0-9._-]*",
                                  jsonio::quoteForError(*message.role));
      }
    }
  }
  return message;
}

}  // namespace kvx::agent::channel
