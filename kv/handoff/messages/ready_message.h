#pragma once

// ReadyMsg ("ready", prefill to decode, PULL): one layer of the request, or every layer
// (kAllLayers), is complete in the prefill side's blocks: the decode side may read it now.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "json/json_reader.h"
#include "kv/handoff/messages/message_fields.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct ReadyMsg {
  static constexpr std::string_view kType = "ready";

  std::string req;
  std::int64_t layer = kAllLayers;
  std::uint64_t attempt = 0;  // the placement it is about (PlaceMsg::attempt); 0: not said

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of a ready; PROTOCOL_ERROR naming the first field that is wrong.
  static Result<ReadyMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
