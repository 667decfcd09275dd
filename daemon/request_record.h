#pragma once

// RequestRecord: what a prefill agent's replay learned about one request, and the JSON form
// of it that the --report file and `kvx demo` share (its keys: daemon/prefill_report.h).

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "kvx/kv_types.h"

namespace kvx::daemon {

struct RequestRecord {
  std::uint64_t index = 0;  // of the prompt in the trace
  std::string id;
  std::string destinationId;     // the decode side's id: the prompt's (a part's group)
  std::int64_t decodeRank = -1;  // sliced: the decode rank it goes to; -1: a whole request
  std::string destination;       // sliced: that rank's agent (whole: status.peer)
  std::uint32_t heads = 0;       // sliced: the KV heads it moves; 0: all
  std::uint64_t tokens = 0;
  std::uint64_t sourceBlocks = 0;
  std::uint64_t prefixHashes = 0;
  KvMode mode = KvMode::kPush;
  bool layerwise = false;
  std::chrono::nanoseconds arrival{0};          // the trace's timestamp, scaled
  std::chrono::nanoseconds submittedAt{0};      // since the replay started
  std::chrono::nanoseconds waitedForBlocks{0};  // allocation stalls on a full pool
  // Its prompt's place in the order prompts got their prefill blocks: 1 for the first; 0
  // while it has none (or never got them).
  std::uint64_t admission = 0;
  std::int64_t submitNs = 0;  // steady_clock ns (daemon/report_clocks.h) at the submit() call
  std::int64_t doneNs = 0;    // steady_clock ns when wait() returned (released or failed)
  // Layer-wise: steady_clock ns when the last layer was handed over (layerReady called);
  // what follows is the exposed tail. 0 otherwise.
  std::int64_t lastLayerNs = 0;
  bool submitted = false;
  bool released = false;  // the request succeeded
  // It did not, because the agent was stopped (SIGTERM): never submitted, or cancelled in
  // flight by the stop. Not a failure.
  bool stopped = false;
  std::string error;       // why it did not (empty when released)
  KvRequestStatus status;  // as the agent reported it (when it knew the request)
};

nlohmann::json toJson(const RequestRecord& record);

}  // namespace kvx::daemon
