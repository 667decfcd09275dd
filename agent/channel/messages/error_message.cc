#include "agent/channel/messages/error_message.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

#include "json/json_reader.h"

namespace kvx::agent::channel {
namespace {

StatusCode parseStatusCode(std::string_view name) {
  for (auto raw = static_cast<std::uint8_t>(StatusCode::kInvalidArgument);
       raw <= static_cast<std::uint8_t>(StatusCode::kInternal); ++raw) {
    const auto code = static_cast<StatusCode>(raw);
    if (toString(code) == name) return code;
  }
  return StatusCode::kPeerFailed;
}

}  // namespace

ErrorMessage ErrorMessage::fromStatus(const Status& status) {
  return ErrorMessage{std::string(toString(status.code())),
                      jsonio::utf8Prefix(status.message(), kMaxMessageBytes)};
}

Status ErrorMessage::toStatus(std::string_view context) const {
  std::string text(context);
  text += ": ";
  text += message;
  return Status(parseStatusCode(code), std::move(text));
}

nlohmann::json ErrorMessage::toJson() const {
  return {{"code", code}, {"message", jsonio::utf8Prefix(message, kMaxMessageBytes)}};
}

Result<ErrorMessage> ErrorMessage::fromJson(const nlohmann::json& value) {
  KVX_ASSIGN_OR_RETURN(jsonio::JsonReader reader,
                       jsonio::JsonReader::object(value, std::string(toString(kType))));
  ErrorMessage result;
  KVX_ASSIGN_OR_RETURN(result.code, reader.string("code", kMaxCodeBytes));
  for (char c : result.code) {
    if (!((c >= 'A' && c <= 'Z') || c == '_')) {
      return jsonio::fieldError(reader.fieldPath("code"), "a status code name [A-Z_]+",
                                jsonio::quoteForError(result.code));
    }
  }
  if (result.code.empty())
    return jsonio::fieldError(reader.fieldPath("code"), "a status code name", "''");
  KVX_ASSIGN_OR_RETURN(result.message, reader.string("message", kMaxMessageBytes));
  return result;
}

}  // namespace kvx::agent::channel
