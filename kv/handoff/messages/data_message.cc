#include "kv/handoff/messages/data_message.h"

#include <nlohmann/json.hpp>

namespace kvx::kv::handoff {

nlohmann::json DataMsg::toJson() const {
  nlohmann::json out = {{"req", req}, {"layer", layer}};
  writeAttempt(out, attempt);
  return out;
}

Result<DataMsg> DataMsg::fromJson(const jsonio::JsonReader& message) {
  DataMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.layer, readLayer(message));
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
