#include "json/json_reader.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <utility>

namespace kvx::jsonio {
namespace {

using nlohmann::json;

// The depth of the deepest array/object nesting in `text` and its number of values (one per
// container, and one more per comma: an upper bound close to the count), stopping early past
// either limit. Brackets and commas inside strings do not count. Invalid JSON is left for the
// parser to reject.
struct JsonShape {
  std::size_t depth = 0;
  std::size_t values = 1;
};

JsonShape scanShape(std::string_view text, std::size_t depthLimit, std::size_t valueLimit) {
  JsonShape shape;
  std::size_t depth = 0;
  bool inString = false;
  bool escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      shape.depth = std::max(shape.depth, ++depth);
      ++shape.values;
    } else if (c == ',') {
      ++shape.values;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    if (shape.depth > depthLimit || shape.values > valueLimit) break;
  }
  return shape;
}

// Bytes of the well-formed UTF-8 character at text[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when there is none there.
std::size_t utf8CharBytes(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = at(i);
  if (lead < 0x80) return 1;
  std::size_t bytes = 0;
  unsigned char low = 0x80;  // bounds of the second byte
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    bytes = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    bytes = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    bytes = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (text.size() - i < bytes || at(i + 1) < low || at(i + 1) > high) return 0;
  for (std::size_t k = 2; k < bytes; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
  }
  return bytes;
}

std::string rangeText(std::string_view kind, auto min, auto max) {
  return std::string(kind) + " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

}  // namespace

Result<json> parseJson(std::string_view text, std::string_view what) {
  const JsonShape shape = scanShape(text, kMaxJsonDepth, kMaxJsonValues);
  if (shape.depth > kMaxJsonDepth) {
    return protocolError(std::string(what) + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                         " levels");
  }
  if (shape.values > kMaxJsonValues) {
    return protocolError(std::string(what) + " holds more than " + std::to_string(kMaxJsonValues) +
                         " values");
  }
  try {
    json value = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
      return protocolError(std::string(what) + " (" + std::to_string(text.size()) +
                           " bytes) is not valid JSON");
    }
    return value;
  } catch (const std::exception& e) {
    return protocolError(std::string(what) + " could not be parsed: " + e.what());
  }
}

std::string dumpJson(const json& value) {
  try {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception&) {
    return "null";  // only reachable on allocation failure
  }
}

std::string_view jsonTypeName(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
      return value.get<std::int64_t>() < 0 ? "negative integer" : "unsigned integer";
    case json::value_t::number_unsigned: return "unsigned integer";
    case json::value_t::number_float: return "float";
    case json::value_t::binary: return "binary";
    case json::value_t::discarded: return "invalid JSON";
  }
  return "unknown";
}

Status fieldError(std::string_view path, std::string_view expected, std::string_view found) {
  std::string message(path);
  message += ": expected ";
  message += expected;
  message += ", got ";
  message += found;
  return protocolError(std::move(message));
}

JsonReader::JsonReader(const json* value, std::string path)
    : value_(value), path_(std::move(path)) {}

Result<JsonReader> JsonReader::object(const json& value, std::string path) {
  if (!value.is_object()) return fieldError(path, "object", jsonTypeName(value));
  return JsonReader(&value, std::move(path));
}

std::string JsonReader::fieldPath(std::string_view key) const {
  std::string path = path_;
  path += '.';
  path += key;
  return path;
}

Result<const json*> JsonReader::field(std::string_view key, std::string_view expected) const {
  auto it = value_->find(key);
  if (it == value_->end()) {
    return protocolError(fieldPath(key) + ": missing (expected " + std::string(expected) + ")");
  }
  return &*it;
}

Result<std::string> JsonReader::string(std::string_view key, std::size_t maxBytes) const {
  KVX_ASSIGN_OR_RETURN(const json* value, field(key, "string"));
  if (!value->is_string()) return fieldError(fieldPath(key), "string", jsonTypeName(*value));
  const auto& text = value->get_ref<const std::string&>();
  if (text.size() > maxBytes) {
    return fieldError(fieldPath(key), "string of at most " + std::to_string(maxBytes) + " bytes",
                      std::to_string(text.size()) + " bytes");
  }
  return text;
}

Result<std::optional<std::string>> JsonReader::optionalString(std::string_view key,
                                                              std::size_t maxBytes) const {
  if (!value_->contains(key)) return std::optional<std::string>();
  KVX_ASSIGN_OR_RETURN(std::string text, string(key, maxBytes));
  return std::optional<std::string>(std::move(text));
}

Result<std::optional<std::uint64_t>> JsonReader::optionalUnsignedInteger(std::string_view key,
                                                                         std::uint64_t min,
                                                                         std::uint64_t max) const {
  if (!value_->contains(key)) return std::optional<std::uint64_t>();
  KVX_ASSIGN_OR_RETURN(std::uint64_t number, unsignedInteger(key, min, max));
  return std::optional<std::uint64_t>(number);
}

Result<std::uint64_t> JsonReader::unsignedInteger(std::string_view key, std::uint64_t min,
                                                  std::uint64_t max) const {
  KVX_ASSIGN_OR_RETURN(const json* value, field(key, "unsigned integer"));
  std::uint64_t number = 0;
  if (value->is_number_unsigned()) {
    number = value->get<std::uint64_t>();
  } else if (value->is_number_integer() && value->get<std::int64_t>() >= 0) {
    number = static_cast<std::uint64_t>(value->get<std::int64_t>());
  } else {
    return fieldError(fieldPath(key), "unsigned integer", jsonTypeName(*value));
  }
  if (number < min || number > max) {
    return fieldError(fieldPath(key), rangeText("unsigned integer", min, max),
                      std::to_string(number));
  }
  return number;
}

Result<std::int64_t> JsonReader::integer(std::string_view key, std::int64_t min,
                                         std::int64_t max) const {
  KVX_ASSIGN_OR_RETURN(const json* value, field(key, "integer"));
  const std::string expected = rangeText("integer", min, max);
  if (value->is_number_unsigned()) {
    const auto number = value->get<std::uint64_t>();
    if (max < 0 || number > static_cast<std::uint64_t>(max)) {
      return fieldError(fieldPath(key), expected, std::to_string(number));
    }
    return static_cast<std::int64_t>(number);
  }
  if (!value->is_number_integer())
    return fieldError(fieldPath(key), expected, jsonTypeName(*value));
  const auto number = value->get<std::int64_t>();
  if (number < min || number > max) {
    return fieldError(fieldPath(key), expected, std::to_string(number));
  }
  return number;
}

Result<bool> JsonReader::boolean(std::string_view key) const {
  KVX_ASSIGN_OR_RETURN(const json* value, field(key, "boolean"));
  if (!value->is_boolean()) return fieldError(fieldPath(key), "boolean", jsonTypeName(*value));
  return value->get<bool>();
}

Result<std::optional<bool>> JsonReader::optionalBoolean(std::string_view key) const {
  if (!value_->contains(key)) return std::optional<bool>();
  KVX_ASSIGN_OR_RETURN(bool flag, boolean(key));
  return std::optional<bool>(flag);
}

Result<std::vector<std::uint8_t>> JsonReader::hexBytes(std::string_view key,
                                                       std::size_t maxBytes) const {
  KVX_ASSIGN_OR_RETURN(std::string text, string(key, maxBytes * 2));
  if (text.size() % 2 != 0) {
    return fieldError(fieldPath(key), "hex string of even length",
                      std::to_string(text.size()) + " characters");
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::vector<std::uint8_t> bytes(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int v = nibble(text[i]);
    if (v < 0) {
      return fieldError(fieldPath(key), "lowercase hex string",
                        quoteForError(text.substr(i, 1)) + " at offset " + std::to_string(i));
    }
    bytes[i / 2] = static_cast<std::uint8_t>(bytes[i / 2] | (i % 2 == 0 ? v << 4 : v));
  }
  return bytes;
}

Result<JsonReader> JsonReader::child(std::string_view key) const {
  KVX_ASSIGN_OR_RETURN(const json* value, field(key, "object"));
  return object(*value, fieldPath(key));
}

Result<const json*> JsonReader::array(std::string_view key, std::size_t maxItems) const {
  KVX_ASSIGN_OR_RETURN(const json* value, field(key, "array"));
  if (!value->is_array()) return fieldError(fieldPath(key), "array", jsonTypeName(*value));
  if (value->size() > maxItems) {
    return fieldError(fieldPath(key), "array of at most " + std::to_string(maxItems) + " items",
                      std::to_string(value->size()) + " items");
  }
  return value;
}

std::string quoteForError(std::string_view text, std::size_t maxBytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < maxBytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    }
  }
  out += text.size() > maxBytes ? "'..." : "'";
  return out;
}

std::string utf8Prefix(std::string_view text, std::size_t maxBytes) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t bytes = utf8CharBytes(text, i);
    if (out.size() + std::max<std::size_t>(bytes, 1) > maxBytes) break;
    if (bytes == 0) {
      out += '?';
      ++i;
    } else {
      out.append(text, i, bytes);
      i += bytes;
    }
  }
  return out;
}

std::string toHex(const std::vector<std::uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    text += kDigits[b >> 4];
    text += kDigits[b & 0xf];
  }
  return text;
}

}  // namespace kvx::jsonio
