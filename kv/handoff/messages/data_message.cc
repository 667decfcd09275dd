#include "kv/handoff/messages/data_message.h"

#include <nlohmann/json.hpp>

namespace kvx::kv::handoff {

nlohmann::json DataMsg::toJson() const { return {{"req", req}, {"layer", layer}}; }

Result<DataMsg> DataMsg::fromJson(const jsonio::JsonReader& message) {
  DataMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.layer, readLayer(message));
  return m;
}

}  // namespace kvx::kv::handoff
