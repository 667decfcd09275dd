#include "agent/channel/messages/auth_challenge.h"

#include <nlohmann/json.hpp>
#include <string>

namespace kvx::agent::channel {

nlohmann::json AuthChallenge::toJson() const {
  return {{"nonce", authBytesToHex(nonce)}, {"proof", authBytesToHex(proof)}};
}

Result<AuthChallenge> AuthChallenge::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  AuthChallenge message;
  KVX_ASSIGN_OR_RETURN(message.nonce, readAuthBytes(reader, "nonce"));
  KVX_ASSIGN_OR_RETURN(message.proof, readAuthBytes(reader, "proof"));
  return message;
}

}  // namespace kvx::agent::channel
