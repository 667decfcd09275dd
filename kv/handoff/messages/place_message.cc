#include "kv/handoff/messages/place_message.h"

#include <nlohmann/json.hpp>

#include "kv/handoff/kv_message.h"
#include "kv/handoff/messages/message_fields.h"

namespace kvx::kv::handoff {

using nlohmann::json;

namespace {

Status readSlice(const jsonio::JsonReader& place, PlaceMsg& m) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader r, place.child("slice"));
  constexpr std::uint64_t kMaxHeads = 1u << 20;
  KVX_ASSIGN_OR_RETURN(std::uint64_t srcFirst, r.unsignedInteger("srcFirst", 0, kMaxHeads));
  KVX_ASSIGN_OR_RETURN(std::uint64_t dstFirst, r.unsignedInteger("dstFirst", 0, kMaxHeads));
  KVX_ASSIGN_OR_RETURN(std::uint64_t heads, r.unsignedInteger("heads", 0, kMaxHeads));
  KVX_ASSIGN_OR_RETURN(std::uint64_t parts, r.unsignedInteger("parts", 1, kMaxGatherParts));
  KVX_ASSIGN_OR_RETURN(m.group, r.string("group", kMaxRequestIdBytes));
  if (!m.group.empty()) {
    Status valid = checkRequestId(m.group);
    if (!valid.isOk()) return jsonio::fieldError(r.fieldPath("group"), "a request id", m.group);
  }
  m.srcHeadFirst = static_cast<std::uint32_t>(srcFirst);
  m.dstHeadFirst = static_cast<std::uint32_t>(dstFirst);
  m.headCount = static_cast<std::uint32_t>(heads);
  m.parts = static_cast<std::uint32_t>(parts);
  return Status::ok();
}

}  // namespace

json PlaceMsg::toJson() const {
  json out = {{"req", req},
              {"tokens", tokens},
              {"blocks", blocks},
              {"prefix", prefixHashes},
              {"mode", std::string(toString(mode))},
              {"layerwise", layerwise},
              {"leaseMs", leaseMs},
              {"source", extentsToJson(sourceBlocks)}};
  if (headCount != 0 || !group.empty() || parts != 1) {
    out["slice"] = {{"srcFirst", srcHeadFirst},
                    {"dstFirst", dstHeadFirst},
                    {"heads", headCount},
                    {"group", group},
                    {"parts", parts}};
  }
  writeAttempt(out, attempt);
  return out;
}

Result<PlaceMsg> PlaceMsg::fromJson(const jsonio::JsonReader& message) {
  PlaceMsg m;
  KVX_ASSIGN_OR_RETURN(m.req, readRequestId(message));
  KVX_ASSIGN_OR_RETURN(m.tokens, message.unsignedInteger("tokens", 1));
  KVX_ASSIGN_OR_RETURN(m.blocks, message.unsignedInteger("blocks", 1));
  KVX_ASSIGN_OR_RETURN(m.prefixHashes, readUnsignedList(message, "prefix"));
  KVX_ASSIGN_OR_RETURN(std::string mode, message.string("mode", 16));
  auto parsed = parseKvMode(mode);
  if (!parsed) return jsonio::fieldError(message.fieldPath("mode"), "push or pull", mode);
  m.mode = *parsed;
  KVX_ASSIGN_OR_RETURN(m.layerwise, message.boolean("layerwise"));
  KVX_ASSIGN_OR_RETURN(m.leaseMs, message.unsignedInteger("leaseMs", 1));
  KVX_ASSIGN_OR_RETURN(m.sourceBlocks, readExtents(message, "source"));
  if (message.value().contains("slice")) KVX_RETURN_IF_ERROR(readSlice(message, m));
  KVX_ASSIGN_OR_RETURN(m.attempt, readAttempt(message));
  return m;
}

}  // namespace kvx::kv::handoff
