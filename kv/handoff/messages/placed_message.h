#pragma once

// PlacedMsg ("placed", decode to prefill): the decode side found room for a request. It names
// the destination blocks, how many leading blocks it already held from a shared prefix (no
// need to move those), and its free blocks after the placement.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "json/json_reader.h"
#include "kv/pool/block_extent.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct PlacedMsg {
  static constexpr std::string_view kType = "placed";

  std::string req;
  std::vector<BlockExtent> blocks;
  std::uint64_t prefixBlocks = 0;
  std::uint64_t freeBlocks = 0;
  std::uint64_t attempt = 0;  // the placement it is about (PlaceMsg::attempt); 0: not said

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of a placed; PROTOCOL_ERROR naming the first field that is wrong.
  static Result<PlacedMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
