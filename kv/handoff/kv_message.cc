#include "kv/handoff/kv_message.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "json/json_reader.h"

namespace kvx::kv::handoff {

using nlohmann::json;

namespace {

// The type field is read as a string of at most this many bytes.
constexpr std::size_t kMaxTypeBytes = 16;

// decode picks the message by its type name: each must be a name of its own, and fit the
// type field's limit.
template <typename... Messages>
constexpr bool typeNamesDistinct(const std::variant<Messages...>*) {
  constexpr std::string_view names[] = {Messages::kType...};
  for (std::size_t i = 0; i < sizeof...(Messages); ++i) {
    if (names[i].empty() || names[i].size() > kMaxTypeBytes) return false;
    for (std::size_t j = i + 1; j < sizeof...(Messages); ++j) {
      if (names[i] == names[j]) return false;
    }
  }
  return true;
}
static_assert(typeNamesDistinct(static_cast<const KvMessage*>(nullptr)),
              "every KV message needs a type name of its own, of at most kMaxTypeBytes");

// Reads the fields of the alternative of KvMessage, from the I-th on, whose type name is
// `type`.
template <std::size_t I = 0>
Result<KvMessage> decodeFields(const jsonio::JsonReader& r, const std::string& type) {
  if constexpr (I == std::variant_size_v<KvMessage>) {
    return protocolError("kv message: unknown type " + jsonio::quoteForError(type));
  } else {
    using Message = std::variant_alternative_t<I, KvMessage>;
    if (type != Message::kType) return decodeFields<I + 1>(r, type);
    KVX_ASSIGN_OR_RETURN(Message message, Message::fromJson(r));
    return KvMessage(std::move(message));
  }
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
  return std::visit(
      [](const auto& m) {
        json out = m.toJson();
        out["t"] = std::string(m.kType);
        return jsonio::dumpJson(out);
      },
      message);
}

Result<KvMessage> decode(std::string_view text) {
  if (text.size() > kMaxMessageBytes) {
    return protocolError("kv message of " + std::to_string(text.size()) + " bytes exceeds " +
                         std::to_string(kMaxMessageBytes));
  }
  KVX_ASSIGN_OR_RETURN(json document, jsonio::parseJson(text, "kv message"));
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader r, jsonio::JsonReader::object(document, "kv"));
  KVX_ASSIGN_OR_RETURN(std::string type, r.string("t", kMaxTypeBytes));
  return decodeFields(r, type);
}

}  // namespace kvx::kv::handoff
