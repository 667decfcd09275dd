#pragma once

// RefusedMsg ("refused", decode to prefill): the decode side will not place a request (or,
// with an empty req, will not pair with the sender at all). It says why, whether trying again
// later may succeed, and its free blocks.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "json/json_reader.h"
#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::kv::handoff {

struct RefusedMsg {
  static constexpr std::string_view kType = "refused";

  std::string req;
  Status why;  // a failure
  bool retryable = false;
  std::uint64_t freeBlocks = 0;
  std::uint64_t attempt = 0;  // the placement it is about (PlaceMsg::attempt); 0: not said

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of a refused; `why` must be a failure code. PROTOCOL_ERROR naming the
  // first field that is wrong.
  static Result<RefusedMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
