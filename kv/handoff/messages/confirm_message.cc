#include "kv/handoff/messages/confirm_message.h"

#include <nlohmann/json.hpp>

#include "kv/handoff/messages/message_fields.h"

namespace kvx::kv::handoff {

nlohmann::json ConfirmMsg::toJson() const {
  nlohmann::json out = {
      {"req", req}, {"free", freeBlocks}, {"descriptors", descriptors}, {"operations", operations}};
  writeAttempt(out, attempt);
  return out;
}

Result<ConfirmMsg> ConfirmMsg::fromJson(const jsonio::JsonReader& message) {
  ConfirmMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.freeBlocks, message.unsignedInteger("free"));
  KVX_ASSIGN_OR_RETURN(m.descriptors, message.unsignedInteger("descriptors"));
  KVX_ASSIGN_OR_RETURN(m.operations, message.unsignedInteger("operations"));
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
