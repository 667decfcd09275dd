#include "kv/handoff/messages/abort_ack_message.h"

#include <nlohmann/json.hpp>

#include "kv/handoff/messages/message_fields.h"

namespace kvx::kv::handoff {

nlohmann::json AbortAckMsg::toJson() const {
  nlohmann::json out = {{"req", req}, {"free", freeBlocks}};
  writeAttempt(out, attempt);
  return out;
}

Result<AbortAckMsg> AbortAckMsg::fromJson(const jsonio::JsonReader& message) {
  AbortAckMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.freeBlocks, message.unsignedInteger("free"));
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
