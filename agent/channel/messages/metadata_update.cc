#include "agent/channel/messages/metadata_update.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "agent/metadata/metadata_codec.h"
#include "json/json_reader.h"

namespace kvx::agent::channel {

nlohmann::json MetadataUpdate::toJson() const {
  return {{"metadata", agent::metadata::metadataToJson(metadata)}};
}

Result<MetadataUpdate> MetadataUpdate::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader field, reader.child("metadata"));
  MetadataUpdate message;
  KVX_ASSIGN_OR_RETURN(message.metadata,
                       agent::metadata::metadataFromJson(field.value(), field.path()));
  return message;
}

}  // namespace kvx::agent::channel
