#pragma once

// RequestRecord: what a prefill agent's replay learned about one request, and the JSON form
// of it that the --report file and `kvx demo` share.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "kvx/kv_types.h"

namespace kvx::cli {

struct RequestRecord {
  std::uint64_t index = 0;  // in the trace
  std::string id;
  std::uint64_t tokens = 0;
  std::uint64_t sourceBlocks = 0;
  std::uint64_t prefixHashes = 0;
  KvMode mode = KvMode::kPush;
  bool layerwise = false;
  std::chrono::nanoseconds arrival{0};          // the trace's timestamp, scaled
  std::chrono::nanoseconds submittedAt{0};      // since the replay started
  std::chrono::nanoseconds waitedForBlocks{0};  // allocation stalls on a full pool
  bool submitted = false;
  bool released = false;   // the request succeeded
  std::string error;       // why it did not (empty when released)
  KvRequestStatus status;  // as the agent reported it (when it knew the request)
};

nlohmann::json toJson(const RequestRecord& record);

}  // namespace kvx::cli
