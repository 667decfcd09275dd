#include "kv/handoff/messages/ready_message.h"

#include <nlohmann/json.hpp>

namespace kvx::kv::handoff {

nlohmann::json ReadyMsg::toJson() const {
  nlohmann::json out = {{"req", req}, {"layer", layer}};
  writeAttempt(out, attempt);
  return out;
}

Result<ReadyMsg> ReadyMsg::fromJson(const jsonio::JsonReader& message) {
  ReadyMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.layer, readLayer(message));
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
