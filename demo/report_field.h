#pragma once

// Reading a count out of an agent's --report JSON, where a report written by an older or a
// failed agent may lack the field.

#include <cstdint>
#include <nlohmann/json.hpp>

namespace kvx::demo {

// object[key] as an unsigned count; 0 when object is not an object or has no such number.
inline std::uint64_t reportCount(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_number()
             ? object[key].get<std::uint64_t>()
             : 0;
}

}  // namespace kvx::demo
