#pragma once

// The fields that several KV hand-off messages carry, and their JSON form: the request id, a
// layer number, lists of block extents and of unsigned integers, and a failure Status. Each
// read function checks what it reads and fails with PROTOCOL_ERROR naming the field by its
// path ("kv.blocks[2]: expected [first, count > 0], got array"). Stateless and thread-safe.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "json/json_reader.h"
#include "kv/pool/block_extent.h"
#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::kv::handoff {

// The layer number that stands for every layer of a request.
inline constexpr std::int64_t kAllLayers = -1;

// "req": a string of at most kMaxRequestIdBytes (kv_message.h).
Result<std::string> readRequestId(const jsonio::JsonReader& message);

// "layer": kAllLayers or a layer number in [0, 2^20].
Result<std::int64_t> readLayer(const jsonio::JsonReader& message);

// "attempt": which placement of a request a message is about (PlaceMsg::attempt). 0, the
// value of a peer that sends none, matches any.
Result<std::uint64_t> readAttempt(const jsonio::JsonReader& message);
void writeAttempt(nlohmann::json& out, std::uint64_t attempt);
bool sameAttempt(std::uint64_t a, std::uint64_t b);
// The attempt a message names; 0 for one that names none (capacity).
template <typename Message>
std::uint64_t attemptOf(const Message& message) {
  return std::visit(
      [](const auto& m) -> std::uint64_t {
        if constexpr (requires { m.attempt; }) {
          return m.attempt;
        } else {
          return 0;
        }
      },
      message);
}

// Block extents as an array of [first, count] pairs; reading refuses a count of 0.
nlohmann::json extentsToJson(const std::vector<BlockExtent>& extents);
Result<std::vector<BlockExtent>> readExtents(const jsonio::JsonReader& message,
                                             std::string_view key);

// An array of unsigned integers.
Result<std::vector<std::uint64_t>> readUnsignedList(const jsonio::JsonReader& object,
                                                    std::string_view key);

// A failure Status carried in a message: never OK.
struct WireStatus {
  Status status;
};

// {"code": <StatusCode as a number>, "message": <text>}. Reading accepts the failure codes
// of StatusCode only, and messages of at most 4096 bytes.
nlohmann::json statusToJson(const Status& status);
Result<WireStatus> readWireStatus(const jsonio::JsonReader& message, std::string_view key);

}  // namespace kvx::kv::handoff
