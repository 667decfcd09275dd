#pragma once

// ConfirmMsg ("confirm", decode to prefill): every block of the request is in place on the
// decode side, which now has freeBlocks free. For PULL it also says how many descriptors and
// transport operations its reads took.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "json/json_reader.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct ConfirmMsg {
  static constexpr std::string_view kType = "confirm";

  std::string req;
  std::uint64_t freeBlocks = 0;
  std::uint64_t descriptors = 0;  // PULL: what the decode side's reads turned into
  std::uint64_t operations = 0;
  std::uint64_t attempt = 0;  // the placement it is about (PlaceMsg::attempt); 0: not said

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of a confirm; PROTOCOL_ERROR naming the first field that is wrong.
  static Result<ConfirmMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
