#pragma once

// AbortMsg ("abort", both ways): the sender gave up on the request, for the reason `why`.
// The receiver answers with an abortAck once it no longer touches the request's blocks.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "json/json_reader.h"
#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::kv::handoff {

struct AbortMsg {
  static constexpr std::string_view kType = "abort";

  std::string req;
  Status why;                 // a failure
  std::uint64_t attempt = 0;  // of the request (PlaceMsg::attempt); 0: not said

  // The fields as a JSON object, without the type field (kv_message.h adds it).
  nlohmann::json toJson() const;
  // Reads the fields of an abort; `why` must be a failure code. PROTOCOL_ERROR naming the
  // first field that is wrong.
  static Result<AbortMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
