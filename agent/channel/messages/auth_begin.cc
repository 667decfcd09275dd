#include "agent/channel/messages/auth_begin.h"

#include <nlohmann/json.hpp>
#include <string>

namespace kvx::agent::channel {

nlohmann::json AuthBegin::toJson() const { return {{"nonce", authBytesToHex(nonce)}}; }

Result<AuthBegin> AuthBegin::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  AuthBegin message;
  KVX_ASSIGN_OR_RETURN(message.nonce, readAuthBytes(reader, "nonce"));
  return message;
}

}  // namespace kvx::agent::channel
