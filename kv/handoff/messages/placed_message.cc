#include "kv/handoff/messages/placed_message.h"

#include <nlohmann/json.hpp>

#include "kv/handoff/messages/message_fields.h"

namespace kvx::kv::handoff {

nlohmann::json PlacedMsg::toJson() const {
  nlohmann::json out = {{"req", req},
                        {"blocks", extentsToJson(blocks)},
                        {"prefixBlocks", prefixBlocks},
                        {"free", freeBlocks}};
  writeAttempt(out, attempt);
  return out;
}

Result<PlacedMsg> PlacedMsg::fromJson(const jsonio::JsonReader& message) {
  PlacedMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.blocks, readExtents(message, "blocks"));
  KVX_ASSIGN_OR_RETURN(m.prefixBlocks, message.unsignedInteger("prefixBlocks"));
  KVX_ASSIGN_OR_RETURN(m.freeBlocks, message.unsignedInteger("free"));
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
