#pragma once

// CapacityMsg ("capacity", decode to prefill): the decode side's number of free blocks
// changed; it is now freeBlocks.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "json/json_reader.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct CapacityMsg {
  static constexpr std::string_view kType = "capacity";

  std::uint64_t freeBlocks = 0;

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of a capacity; PROTOCOL_ERROR naming the first field that is wrong.
  static Result<CapacityMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
