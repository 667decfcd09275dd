#include "kv/handoff/messages/ready_message.h"

#include <nlohmann/json.hpp>

namespace kvx::kv::handoff {

nlohmann::json ReadyMsg::toJson() const { return {{"req", req}, {"layer", layer}}; }

Result<ReadyMsg> ReadyMsg::fromJson(const jsonio::JsonReader& message) {
  ReadyMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.layer, readLayer(message));
  return m;
}

}  // namespace kvx::kv::handoff
