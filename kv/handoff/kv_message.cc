#include "kv/handoff/kv_message.h"

#include <nlohmann/json.hpp>

#include "json/json_reader.h"

namespace kvx::kv::handoff {

using jsonio::JsonReader;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxList = 1 << 20;

json extentsJson(const std::vector<BlockExtent>& extents) {
  json out = json::array();
  for (const auto& e : extents) out.push_back(json::array({e.first, e.count}));
  return out;
}

json statusJson(const Status& s) {
  return json{{"code", static_cast<int>(s.code())}, {"message", s.message()}};
}

json poolJson(const kv::PoolDescription& pool) {
  json regions = json::array();
  for (RegionId id : pool.tensorRegions) regions.push_back(id.value);
  return json{{"shape", json::parse(kv::shapeToJson(pool.shape))},
              {"layout", std::string(kv::toString(pool.layout))},
              {"blocks", pool.blocks},
              {"regions", regions}};
}

struct Encoder {
  json operator()(const HelloMsg& m) const {
    json out = {{"t", "hello"},
                {"role", std::string(toString(m.role))},
                {"pool", poolJson(m.pool)},
                {"free", m.freeBlocks},
                {"reply", m.reply},
                {"mode", std::string(toString(m.mode))}};
    if (m.session != 0) out["session"] = m.session;
    return out;
  }
  json operator()(const PlaceMsg& m) const {
    json out = {{"t", "place"},
                {"req", m.req},
                {"tokens", m.tokens},
                {"blocks", m.blocks},
                {"prefix", m.prefixHashes},
                {"mode", std::string(toString(m.mode))},
                {"layerwise", m.layerwise},
                {"leaseMs", m.leaseMs},
                {"source", extentsJson(m.sourceBlocks)}};
    if (m.headCount != 0 || !m.group.empty() || m.parts != 1) {
      out["slice"] = {{"srcFirst", m.srcHeadFirst},
                      {"dstFirst", m.dstHeadFirst},
                      {"heads", m.headCount},
                      {"group", m.group},
                      {"parts", m.parts}};
    }
    return out;
  }
  json operator()(const PlacedMsg& m) const {
    return {{"t", "placed"},
            {"req", m.req},
            {"blocks", extentsJson(m.blocks)},
            {"prefixBlocks", m.prefixBlocks},
            {"free", m.freeBlocks}};
  }
  json operator()(const RefusedMsg& m) const {
    return {{"t", "refused"},
            {"req", m.req},
            {"why", statusJson(m.why)},
            {"retryable", m.retryable},
            {"free", m.freeBlocks}};
  }
  json operator()(const DataMsg& m) const {
    return {{"t", "data"}, {"req", m.req}, {"layer", m.layer}};
  }
  json operator()(const ReadyMsg& m) const {
    return {{"t", "ready"}, {"req", m.req}, {"layer", m.layer}};
  }
  json operator()(const ConfirmMsg& m) const {
    return {{"t", "confirm"},
            {"req", m.req},
            {"free", m.freeBlocks},
            {"descriptors", m.descriptors},
            {"operations", m.operations}};
  }
  json operator()(const AbortMsg& m) const {
    return {{"t", "abort"}, {"req", m.req}, {"why", statusJson(m.why)}};
  }
  json operator()(const AbortAckMsg& m) const {
    return {{"t", "abortAck"}, {"req", m.req}, {"free", m.freeBlocks}};
  }
  json operator()(const CapacityMsg& m) const {
    return {{"t", "capacity"}, {"free", m.freeBlocks}};
  }
};

Result<std::vector<BlockExtent>> readExtents(const jsonio::JsonReader& r, std::string_view key) {
  KVX_ASSIGN_OR_RETURN(const json* list, r.array(key, kMaxList));
  std::vector<BlockExtent> out;
  out.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_number_unsigned() ||
        !e[1].is_number_unsigned() || e[1].get<std::uint64_t>() == 0) {
      return jsonio::fieldError(r.fieldPath(key) + "[" + std::to_string(i) + "]",
                                "[first, count > 0]", jsonio::jsonTypeName(e));
    }
    out.push_back({e[0].get<std::uint64_t>(), e[1].get<std::uint64_t>()});
  }
  return out;
}

Result<std::vector<std::uint64_t>> readIds(const jsonio::JsonReader& r, std::string_view key) {
  KVX_ASSIGN_OR_RETURN(const json* list, r.array(key, kMaxList));
  std::vector<std::uint64_t> out;
  out.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    if (!(*list)[i].is_number_unsigned()) {
      return jsonio::fieldError(r.fieldPath(key) + "[" + std::to_string(i) + "]",
                                "unsigned integer", jsonio::jsonTypeName((*list)[i]));
    }
    out.push_back((*list)[i].get<std::uint64_t>());
  }
  return out;
}

// A failure Status carried in a message (never OK).
struct WireStatus {
  Status status;
};

Result<WireStatus> readStatus(const jsonio::JsonReader& r) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader why, r.child("why"));
  KVX_ASSIGN_OR_RETURN(std::uint64_t code,
                       why.unsignedInteger("code", 1, static_cast<int>(StatusCode::kInternal)));
  KVX_ASSIGN_OR_RETURN(std::string message, why.string("message", 4096));
  return WireStatus{Status(static_cast<StatusCode>(code), std::move(message))};
}

Result<kv::PoolDescription> readPool(const jsonio::JsonReader& r) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader pool, r.child("pool"));
  kv::PoolDescription out;
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader shape, pool.child("shape"));
  auto parsed = kv::shapeFromJson(shape.value().dump());
  if (!parsed.isOk()) return protocolError(shape.path() + ": " + parsed.status().message());
  out.shape = std::move(parsed).value();
  KVX_ASSIGN_OR_RETURN(std::string layout, pool.string("layout", 32));
  auto kind = kv::parseLayout(layout);
  if (!kind.isOk()) return protocolError(pool.fieldPath("layout") + ": " + kind.status().message());
  out.layout = *kind;
  KVX_ASSIGN_OR_RETURN(out.blocks, pool.unsignedInteger("blocks", 1));
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint64_t> regions, readIds(pool, "regions"));
  for (std::uint64_t id : regions) out.tensorRegions.push_back(RegionId(id));
  Status valid = kv::validateDescription(out);
  if (!valid.isOk()) return protocolError(pool.path() + ": " + valid.message());
  return out;
}

Result<std::string> readReq(const jsonio::JsonReader& r) {
  return r.string("req", kMaxRequestIdBytes);
}

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

Result<KvMessage> decodeObject(const jsonio::JsonReader& r, const std::string& type) {
  if (type == "hello") {
    HelloMsg m;
    KVX_ASSIGN_OR_RETURN(std::string role, r.string("role", 16));
    auto parsed = parseKvRole(role);
    if (!parsed) return jsonio::fieldError(r.fieldPath("role"), "prefill or decode", role);
    m.role = *parsed;
    KVX_ASSIGN_OR_RETURN(m.pool, readPool(r));
    KVX_ASSIGN_OR_RETURN(m.freeBlocks, r.unsignedInteger("free"));
    KVX_ASSIGN_OR_RETURN(m.reply, r.boolean("reply"));
    KVX_ASSIGN_OR_RETURN(std::optional<std::string> mode, r.optionalString("mode", 16));
    if (mode) {  // older agents do not send it: they push
      auto parsedMode = parseKvMode(*mode);
      if (!parsedMode) return jsonio::fieldError(r.fieldPath("mode"), "push or pull", *mode);
      m.mode = *parsedMode;
    }
    KVX_ASSIGN_OR_RETURN(std::optional<std::uint64_t> session,
                         r.optionalUnsignedInteger("session", 1));
    m.session = session.value_or(0);  // older agents do not say
    return KvMessage(std::move(m));
  }
  if (type == "place") {
    PlaceMsg m;
    KVX_ASSIGN_OR_RETURN(m.req, readReq(r));
    KVX_ASSIGN_OR_RETURN(m.tokens, r.unsignedInteger("tokens", 1));
    KVX_ASSIGN_OR_RETURN(m.blocks, r.unsignedInteger("blocks", 1));
    KVX_ASSIGN_OR_RETURN(m.prefixHashes, readIds(r, "prefix"));
    KVX_ASSIGN_OR_RETURN(std::string mode, r.string("mode", 16));
    auto parsed = parseKvMode(mode);
    if (!parsed) return jsonio::fieldError(r.fieldPath("mode"), "push or pull", mode);
    m.mode = *parsed;
    KVX_ASSIGN_OR_RETURN(m.layerwise, r.boolean("layerwise"));
    KVX_ASSIGN_OR_RETURN(m.leaseMs, r.unsignedInteger("leaseMs", 1));
    KVX_ASSIGN_OR_RETURN(m.sourceBlocks, readExtents(r, "source"));
    if (r.value().contains("slice")) KVX_RETURN_IF_ERROR(readSlice(r, m));
    return KvMessage(std::move(m));
  }
  if (type == "placed") {
    PlacedMsg m;
    KVX_ASSIGN_OR_RETURN(m.req, readReq(r));
    KVX_ASSIGN_OR_RETURN(m.blocks, readExtents(r, "blocks"));
    KVX_ASSIGN_OR_RETURN(m.prefixBlocks, r.unsignedInteger("prefixBlocks"));
    KVX_ASSIGN_OR_RETURN(m.freeBlocks, r.unsignedInteger("free"));
    return KvMessage(std::move(m));
  }
  if (type == "refused") {
    RefusedMsg m;
    KVX_ASSIGN_OR_RETURN(m.req, readReq(r));
    KVX_ASSIGN_OR_RETURN(WireStatus why, readStatus(r));
    m.why = std::move(why.status);
    KVX_ASSIGN_OR_RETURN(m.retryable, r.boolean("retryable"));
    KVX_ASSIGN_OR_RETURN(m.freeBlocks, r.unsignedInteger("free"));
    return KvMessage(std::move(m));
  }
  if (type == "data" || type == "ready") {
    std::string req;
    KVX_ASSIGN_OR_RETURN(req, readReq(r));
    KVX_ASSIGN_OR_RETURN(std::int64_t layer, r.integer("layer", kAllLayers, 1 << 20));
    if (type == "data") return KvMessage(DataMsg{std::move(req), layer});
    return KvMessage(ReadyMsg{std::move(req), layer});
  }
  if (type == "confirm") {
    ConfirmMsg m;
    KVX_ASSIGN_OR_RETURN(m.req, readReq(r));
    KVX_ASSIGN_OR_RETURN(m.freeBlocks, r.unsignedInteger("free"));
    KVX_ASSIGN_OR_RETURN(m.descriptors, r.unsignedInteger("descriptors"));
    KVX_ASSIGN_OR_RETURN(m.operations, r.unsignedInteger("operations"));
    return KvMessage(std::move(m));
  }
  if (type == "abortAck") {
    AbortAckMsg m;
    KVX_ASSIGN_OR_RETURN(m.req, readReq(r));
    KVX_ASSIGN_OR_RETURN(m.freeBlocks, r.unsignedInteger("free"));
    return KvMessage(std::move(m));
  }
  if (type == "abort") {
    AbortMsg m;
    KVX_ASSIGN_OR_RETURN(m.req, readReq(r));
    KVX_ASSIGN_OR_RETURN(WireStatus why, readStatus(r));
    m.why = std::move(why.status);
    return KvMessage(std::move(m));
  }
  if (type == "capacity") {
    CapacityMsg m;
    KVX_ASSIGN_OR_RETURN(m.freeBlocks, r.unsignedInteger("free"));
    return KvMessage(m);
  }
  return protocolError("kv message: unknown type " + jsonio::quoteForError(type));
}

}  // namespace

Status checkRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) {
    return invalidArgument("request ids must have 1 to " + std::to_string(kMaxRequestIdBytes) +
                           " bytes; got " + std::to_string(id.size()));
  }
  try {
    (void)json(std::string(id)).dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    return invalidArgument("request id " + jsonio::quoteForError(id) + " is not valid UTF-8");
  }
  return Status::ok();
}

std::string encode(const KvMessage& message) {
  return jsonio::dumpJson(std::visit(Encoder{}, message));
}

Result<KvMessage> decode(std::string_view text) {
  if (text.size() > kMaxMessageBytes) {
    return protocolError("kv message of " + std::to_string(text.size()) + " bytes exceeds " +
                         std::to_string(kMaxMessageBytes));
  }
  KVX_ASSIGN_OR_RETURN(json document, jsonio::parseJson(text, "kv message"));
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader r, jsonio::JsonReader::object(document, "kv"));
  KVX_ASSIGN_OR_RETURN(std::string type, r.string("t", 16));
  return decodeObject(r, type);
}

}  // namespace kvx::kv::handoff
