#include "kv/handoff/messages/message_fields.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "kv/handoff/kv_message.h"

namespace kvx::kv::handoff {

using nlohmann::json;

namespace {

// More elements than a message of kMaxMessageBytes can hold: in practice the message size is
// what bounds a list.
constexpr std::size_t kMaxList = 1 << 20;

std::string elementPath(const jsonio::JsonReader& r, std::string_view key, std::size_t i) {
  return r.fieldPath(key) + "[" + std::to_string(i) + "]";
}

}  // namespace

Result<std::string> readRequestId(const jsonio::JsonReader& message) {
  return message.string("req", kMaxRequestIdBytes);
}

Result<std::uint64_t> readAttempt(const jsonio::JsonReader& message) {
  KVX_ASSIGN_OR_RETURN(std::optional<std::uint64_t> attempt,
                       message.optionalUnsignedInteger("attempt"));
  return attempt.value_or(0);
}

void writeAttempt(nlohmann::json& out, std::uint64_t attempt) {
  if (attempt != 0) out["attempt"] = attempt;
}

bool sameAttempt(std::uint64_t a, std::uint64_t b) { return a == 0 || b == 0 || a == b; }

Result<std::int64_t> readLayer(const jsonio::JsonReader& message) {
  return message.integer("layer", kAllLayers, 1 << 20);
}

json extentsToJson(const std::vector<BlockExtent>& extents) {
  json out = json::array();
  for (const auto& e : extents) out.push_back(json::array({e.first, e.count}));
  return out;
}

Result<std::vector<BlockExtent>> readExtents(const jsonio::JsonReader& message,
                                             std::string_view key) {
  KVX_ASSIGN_OR_RETURN(const json* list, message.array(key, kMaxList));
  std::vector<BlockExtent> out;
  out.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_number_unsigned() ||
        !e[1].is_number_unsigned() || e[1].get<std::uint64_t>() == 0) {
      return jsonio::fieldError(elementPath(message, key, i), "[first, count > 0]",
                                jsonio::jsonTypeName(e));
    }
    out.push_back({e[0].get<std::uint64_t>(), e[1].get<std::uint64_t>()});
  }
  return out;
}

Result<std::vector<std::uint64_t>> readUnsignedList(const jsonio::JsonReader& object,
                                                    std::string_view key) {
  KVX_ASSIGN_OR_RETURN(const json* list, object.array(key, kMaxList));
  std::vector<std::uint64_t> out;
  out.reserve(list->size());
  for (std::size_t i = 0; i < list->size(); ++i) {
    if (!(*list)[i].is_number_unsigned()) {
      return jsonio::fieldError(elementPath(object, key, i), "unsigned integer",
                                jsonio::jsonTypeName((*list)[i]));
    }
    out.push_back((*list)[i].get<std::uint64_t>());
  }
  return out;
}

json statusToJson(const Status& status) {
  return json{{"code", static_cast<int>(status.code())}, {"message", status.message()}};
}

Result<WireStatus> readWireStatus(const jsonio::JsonReader& message, std::string_view key) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader why, message.child(key));
  // From 1: code 0 is OK, and what a message carries is a failure.
  KVX_ASSIGN_OR_RETURN(std::uint64_t code,
                       why.unsignedInteger("code", 1, static_cast<int>(StatusCode::kInternal)));
  KVX_ASSIGN_OR_RETURN(std::string text, why.string("message", 4096));
  return WireStatus{Status(static_cast<StatusCode>(code), std::move(text))};
}

}  // namespace kvx::kv::handoff
