#include "kv/handoff/messages/hello_message.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kv/handoff/messages/message_fields.h"
#include "kv/pool/model_shape.h"
#include "kv/pool/pool_layout.h"

namespace kvx::kv::handoff {

using nlohmann::json;

namespace {

// The pool description travels in the hello only, so its JSON form lives here.
json poolToJson(const kv::PoolDescription& pool) {
  json regions = json::array();
  for (RegionId id : pool.tensorRegions) regions.push_back(id.value);
  return json{{"shape", json::parse(kv::shapeToJson(pool.shape))},
              {"layout", std::string(kv::toString(pool.layout))},
              {"blocks", pool.blocks},
              {"regions", regions}};
}

Result<kv::PoolDescription> readPool(const jsonio::JsonReader& message, std::string_view key) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader pool, message.child(key));
  kv::PoolDescription out;
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader shape, pool.child("shape"));
  // The shape has a reader of its own, which takes text and reports without the field path.
  auto parsed = kv::shapeFromJson(shape.value().dump());
  if (!parsed.isOk()) return protocolError(shape.path() + ": " + parsed.status().message());
  out.shape = std::move(parsed).value();
  KVX_ASSIGN_OR_RETURN(std::string layout, pool.string("layout", 32));
  auto kind = kv::parseLayout(layout);
  if (!kind.isOk()) return protocolError(pool.fieldPath("layout") + ": " + kind.status().message());
  out.layout = *kind;
  KVX_ASSIGN_OR_RETURN(out.blocks, pool.unsignedInteger("blocks", 1));
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint64_t> regions, readUnsignedList(pool, "regions"));
  for (std::uint64_t id : regions) out.tensorRegions.push_back(RegionId(id));
  Status valid = kv::validateDescription(out);
  if (!valid.isOk()) return protocolError(pool.path() + ": " + valid.message());
  return out;
}

}  // namespace

json HelloMsg::toJson() const {
  json out = {{"role", std::string(toString(role))},
              {"pool", poolToJson(pool)},
              {"free", freeBlocks},
              {"reply", reply},
              {"mode", std::string(toString(mode))}};
  if (session != 0) out["session"] = session;
  return out;
}

Result<HelloMsg> HelloMsg::fromJson(const jsonio::JsonReader& message) {
  HelloMsg m;
  KVX_ASSIGN_OR_RETURN(std::string role, message.string("role", 16));
  auto parsed = parseKvRole(role);
  if (!parsed) return jsonio::fieldError(message.fieldPath("role"), "prefill or decode", role);
  m.role = *parsed;
  KVX_ASSIGN_OR_RETURN(m.pool, readPool(message, "pool"));
  KVX_ASSIGN_OR_RETURN(m.freeBlocks, message.unsignedInteger("free"));
  KVX_ASSIGN_OR_RETURN(m.reply, message.boolean("reply"));
  KVX_ASSIGN_OR_RETURN(std::optional<std::string> mode, message.optionalString("mode", 16));
  if (mode) {  // older agents do not send it: they push
    auto parsedMode = parseKvMode(*mode);
    if (!parsedMode) return jsonio::fieldError(message.fieldPath("mode"), "push or pull", *mode);
    m.mode = *parsedMode;
  }
  KVX_ASSIGN_OR_RETURN(std::optional<std::uint64_t> session,
                       message.optionalUnsignedInteger("session", 1));
  m.session = session.value_or(0);  // older agents do not say
  return m;
}

}  // namespace kvx::kv::handoff
