#pragma once

// AbortAckMsg ("abortAck", both ways): the answer to an abort. The sender no longer touches
// the request's blocks. freeBlocks: the decode side's free blocks (a prefill side sends 0).

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "json/json_reader.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct AbortAckMsg {
  static constexpr std::string_view kType = "abortAck";

  std::string req;
  std::uint64_t freeBlocks = 0;
  std::uint64_t attempt = 0;  // of the request aborted (PlaceMsg::attempt); 0: not said

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of an abortAck; PROTOCOL_ERROR naming the first field that is wrong.
  static Result<AbortAckMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
