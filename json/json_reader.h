#pragma once

// Checked reading of JSON that came from a peer. Every accessor checks type and range and
// fails with PROTOCOL_ERROR naming the field path, what was expected and what was found:
//   "hello.metadata.regions[3].length: expected unsigned integer, got string".
// Nothing here throws; nlohmann exceptions are caught and converted at this boundary.
//
// Unknown fields are ignored, so that a newer peer speaking the same protocol version may
// add optional fields.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::jsonio {

// Nesting deeper than this is rejected before parsing; real messages nest 4 levels.
inline constexpr std::size_t kMaxJsonDepth = 32;
// So is a document of more values than this (a parsed value costs 16 bytes and more, an empty
// object about 80: a 15 MiB frame of "{}," would take 400 MB). The largest real messages, a
// KV request for a million-token prompt, hold about 70 thousand.
inline constexpr std::size_t kMaxJsonValues = 1u << 20;

// Parses `text`. `what` names the document in errors ("hello payload"). Rejects invalid
// JSON, invalid UTF-8, nesting deeper than kMaxJsonDepth and more than kMaxJsonValues values.
Result<nlohmann::json> parseJson(std::string_view text, std::string_view what);

// Serializes `value` compactly; strings that are not valid UTF-8 are repaired (U+FFFD)
// rather than throwing.
std::string dumpJson(const nlohmann::json& value);

// "string", "unsigned integer", "negative integer", "float", "boolean", "null", "object",
// "array": the words used in "expected X, got Y".
std::string_view jsonTypeName(const nlohmann::json& value);

// "<path>: expected <expected>, got <found>" as a PROTOCOL_ERROR.
Status fieldError(std::string_view path, std::string_view expected, std::string_view found);

// A view of one JSON object with its path. Holds a pointer into the document: the document
// must outlive the reader.
class JsonReader {
 public:
  // Fails unless `value` is an object.
  static Result<JsonReader> object(const nlohmann::json& value, std::string path);

  const std::string& path() const { return path_; }
  const nlohmann::json& value() const { return *value_; }
  std::string fieldPath(std::string_view key) const;

  // Strings are limited in bytes (UTF-8 is already checked by the parser).
  Result<std::string> string(std::string_view key, std::size_t maxBytes) const;
  Result<std::optional<std::string>> optionalString(std::string_view key,
                                                    std::size_t maxBytes) const;
  Result<std::uint64_t> unsignedInteger(
      std::string_view key, std::uint64_t min = 0,
      std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const;
  // Absent: nullopt; present: checked as unsignedInteger.
  Result<std::optional<std::uint64_t>> optionalUnsignedInteger(
      std::string_view key, std::uint64_t min = 0,
      std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const;
  Result<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) const;
  Result<bool> boolean(std::string_view key) const;
  // Absent: nullopt; present: checked as boolean.
  Result<std::optional<bool>> optionalBoolean(std::string_view key) const;
  // A lowercase hex string of even length, decoded; at most `maxBytes` decoded bytes.
  Result<std::vector<std::uint8_t>> hexBytes(std::string_view key, std::size_t maxBytes) const;
  Result<JsonReader> child(std::string_view key) const;
  // An array of at most `maxItems` elements.
  Result<const nlohmann::json*> array(std::string_view key, std::size_t maxItems) const;

 private:
  JsonReader(const nlohmann::json* value, std::string path);
  // The field, or nullptr; `expected` is used for the "missing" error.
  Result<const nlohmann::json*> field(std::string_view key, std::string_view expected) const;

  const nlohmann::json* value_;
  std::string path_;
};

// `text` for an error message: single-quoted, non-printable bytes as \xNN, cut after
// `maxBytes` with "...".
std::string quoteForError(std::string_view text, std::size_t maxBytes = 64);

// The longest prefix of `text`, with every byte that is not part of valid UTF-8 replaced by
// '?', that fits in `maxBytes`: local text (a Status message) cut so that a peer's reader
// accepts it as a string of at most `maxBytes`. dumpJson alone would not do: it repairs an
// invalid byte with a 3-byte U+FFFD, and a cut by bytes can split a character.
std::string utf8Prefix(std::string_view text, std::size_t maxBytes);

// Lowercase hex of `bytes`.
std::string toHex(const std::vector<std::uint8_t>& bytes);

}  // namespace kvx::jsonio
