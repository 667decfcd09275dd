#include "workload/trace_reader.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "files/bounded_file.h"

namespace kvx::workload {
namespace {

using nlohmann::json;

// A JSON value as an error message shows it: short enough to read on one line. A container
// holding containers is shown by its type only: dump() recurses, and a line nested 100,000
// levels deep would overflow the stack.
std::string shown(const json& value) {
  const bool nested =
      value.is_structured() && std::any_of(value.begin(), value.end(),
                                           [](const json& item) { return item.is_structured(); });
  if (nested) return std::string("an ") + value.type_name();
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

Status fieldError(std::string_view field, const std::string& requirement, const json& value) {
  return invalidArgument("'" + std::string(field) + "' must be " + requirement + ", got " +
                         shown(value));
}

Result<const json*> findField(const json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return invalidArgument(std::string("missing field '") + field + "'");
  return &*it;
}

// An integer field >= minimum. Floats are accepted only where `allowIntegralFloat` (timestamps
// written by tools that keep times as doubles) and only with an integral value.
Result<std::uint64_t> readInteger(const json& object, const char* field, std::uint64_t minimum,
                                  bool allowIntegralFloat) {
  KVX_ASSIGN_OR_RETURN(const json* value, findField(object, field));
  const std::string requirement = "an integer >= " + std::to_string(minimum);
  std::uint64_t result = 0;
  if (value->is_number_unsigned()) {
    result = value->get<std::uint64_t>();
  } else if (value->is_number_integer()) {
    return fieldError(field, requirement, *value);  // negative
  } else if (value->is_number_float() && allowIntegralFloat) {
    const double number = value->get<double>();
    // 2^64: the first double that no longer fits in uint64_t.
    if (!(number >= 0.0 && number < 18446744073709551616.0) || std::floor(number) != number) {
      return fieldError(field, requirement, *value);
    }
    result = static_cast<std::uint64_t>(number);
  } else {
    return fieldError(field, requirement, *value);
  }
  if (result < minimum) return fieldError(field, requirement, *value);
  return result;
}

Result<std::vector<std::uint64_t>> readHashIds(const json& object, std::uint64_t inputLength) {
  KVX_ASSIGN_OR_RETURN(const json* value, findField(object, "hash_ids"));
  if (!value->is_array()) {
    return fieldError("hash_ids", "an array of unsigned integers", *value);
  }
  const std::uint64_t chunks = chunkCount(inputLength);
  if (value->size() > chunks) {
    return invalidArgument("'hash_ids' has " + std::to_string(value->size()) +
                           " ids but input_length " + std::to_string(inputLength) + " has only " +
                           std::to_string(chunks) + " chunks of " +
                           std::to_string(kPrefixChunkTokens) + " tokens");
  }
  std::vector<std::uint64_t> ids;
  ids.reserve(value->size());
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& id = (*value)[i];
    if (!id.is_number_unsigned()) {
      return fieldError("hash_ids[" + std::to_string(i) + "]", "an unsigned integer", id);
    }
    ids.push_back(id.get<std::uint64_t>());
  }
  return ids;
}

Result<TraceRecord> parseLine(std::string_view line) {
  json object;
  try {
    object = json::parse(line);
  } catch (const json::exception& e) {
    return invalidArgument(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!object.is_object()) return invalidArgument("expected a JSON object, got " + shown(object));
  TraceRecord record;
  KVX_ASSIGN_OR_RETURN(record.timestampMs, readInteger(object, "timestamp", 0, true));
  KVX_ASSIGN_OR_RETURN(record.inputLength, readInteger(object, "input_length", 1, false));
  KVX_ASSIGN_OR_RETURN(record.outputLength, readInteger(object, "output_length", 0, false));
  KVX_ASSIGN_OR_RETURN(record.hashIds, readHashIds(object, record.inputLength));
  return record;
}

bool isBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

Result<std::vector<TraceRecord>> parseTrace(std::string_view text, std::string_view sourceName) {
  std::vector<TraceRecord> records;
  std::uint64_t lineNumber = 0;
  std::uint64_t previousLine = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++lineNumber;
    if (isBlank(line)) continue;
    if (line.back() == '\r') line.remove_suffix(1);
    const std::string location = std::string(sourceName) + ":" + std::to_string(lineNumber);
    Result<TraceRecord> record = parseLine(line);
    if (!record.isOk()) return record.status().withContext(location);
    if (!records.empty() && record->timestampMs < records.back().timestampMs) {
      return invalidArgument(location + ": timestamp " + std::to_string(record->timestampMs) +
                             " is earlier than " + std::to_string(records.back().timestampMs) +
                             " on line " + std::to_string(previousLine) +
                             "; timestamps must be non-decreasing (sort the trace)");
    }
    previousLine = lineNumber;
    records.push_back(std::move(record).value());
  }
  return records;
}

Result<std::vector<TraceRecord>> readTraceFile(const std::string& path) {
  KVX_ASSIGN_OR_RETURN(std::string text, files::readBoundedFile(path, kMaxTraceFileBytes, "trace"));
  return parseTrace(text, path);
}

}  // namespace kvx::workload
