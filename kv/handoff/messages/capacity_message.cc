#include "kv/handoff/messages/capacity_message.h"

#include <nlohmann/json.hpp>

namespace kvx::kv::handoff {

nlohmann::json CapacityMsg::toJson() const { return {{"free", freeBlocks}}; }

Result<CapacityMsg> CapacityMsg::fromJson(const jsonio::JsonReader& message) {
  CapacityMsg m;
  KVX_ASSIGN_OR_RETURN(m.freeBlocks, message.unsignedInteger("free"));
  return m;
}

}  // namespace kvx::kv::handoff
