#include "kv/handoff/messages/refused_message.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "kv/handoff/messages/message_fields.h"

namespace kvx::kv::handoff {

nlohmann::json RefusedMsg::toJson() const {
  nlohmann::json out = {
      {"req", req}, {"why", statusToJson(why)}, {"retryable", retryable}, {"free", freeBlocks}};
  writeAttempt(out, attempt);
  return out;
}

Result<RefusedMsg> RefusedMsg::fromJson(const jsonio::JsonReader& message) {
  RefusedMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(WireStatus why, readWireStatus(message, "why"));
  m.why = std::move(why.status);
  KVX_ASSIGN_OR_RETURN(m.retryable, message.boolean("retryable"));
  KVX_ASSIGN_OR_RETURN(m.freeBlocks, message.unsignedInteger("free"));
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
