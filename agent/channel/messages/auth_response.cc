#include "agent/channel/messages/auth_response.h"

#include <nlohmann/json.hpp>
#include <string>

namespace kvx::agent::channel {

nlohmann::json AuthResponse::toJson() const { return {{"proof", authBytesToHex(proof)}}; }

Result<AuthResponse> AuthResponse::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  AuthResponse message;
  KVX_ASSIGN_OR_RETURN(message.proof, readAuthBytes(reader, "proof"));
  return message;
}

}  // namespace kvx::agent::channel
