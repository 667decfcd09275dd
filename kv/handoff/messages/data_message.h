#pragma once

// DataMsg ("data", prefill to decode, PUSH): the prefill side has written one layer of the
// request into the decode side's blocks, or every layer (kAllLayers). Sent on the endpoint
// that carried the data, after it, so it arrives after the data.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "json/json_reader.h"
#include "kv/handoff/messages/message_fields.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct DataMsg {
  static constexpr std::string_view kType = "data";

  std::string req;
  std::int64_t layer = kAllLayers;
  std::uint64_t attempt = 0;  // the placement it is about (PlaceMsg::attempt); 0: not said

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of a data; PROTOCOL_ERROR naming the first field that is wrong.
  static Result<DataMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
