#include "kv/handoff/messages/abort_message.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "kv/handoff/messages/message_fields.h"

namespace kvx::kv::handoff {

nlohmann::json AbortMsg::toJson() const {
  nlohmann::json out = {{"req", req}, {"why", statusToJson(why)}};
  writeAttempt(out, attempt);
  return out;
}

Result<AbortMsg> AbortMsg::fromJson(const jsonio::JsonReader& message) {
  AbortMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(WireStatus why, readWireStatus(message, "why"));
  m.why = std::move(why.status);
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
