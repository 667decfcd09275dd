#pragma once

// HelloMsg ("hello", both ways): what an agent tells a peer about itself when their KV
// session starts: its role, its pool, its free blocks, its default direction and its session
// number. reply=false opens the exchange; reply=true answers it.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "json/json_reader.h"
#include "kv/pool/pool_description.h"
#include "kvx/kv_types.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct HelloMsg {
  static constexpr std::string_view kType = "hello";

  KvRole role = KvRole::kPrefill;
  kv::PoolDescription pool;
  std::uint64_t freeBlocks = 0;
  bool reply = false;
  // The sender's default direction: tells the other side which pool it will address, so
  // that only the initiating side readies the other's memory ahead of the first request.
  KvMode mode = KvMode::kPush;
  // The sender's KV session with the receiver: the same number for as long as the sender
  // keeps the session (its requests with the receiver), a new one once it has ended it. A
  // hello with another number than the last one tells the receiver that the sender dropped
  // every request of the old session, even when no link was seen to close. 0: not said
  // (older agents).
  std::uint64_t session = 0;

  // The fields as a JSON object, without the type field (kv_message.h adds it). Session 0
  // is left out.
  nlohmann::json toJson() const;
  // Reads the fields of a hello. A missing mode is push and a missing session is 0 (older
  // agents send neither); the pool must pass kv::validateDescription. PROTOCOL_ERROR naming
  // the first field that is wrong.
  static Result<HelloMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
