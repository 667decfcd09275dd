#pragma once

// PlaceMsg ("place", prefill to decode): asks the decode side to find room for a request's
// KV blocks. It names the request, its tokens and blocks, the prefix hashes the decode side
// may already hold, the direction, whether the layers move one by one and the lease on the
// blocks; for PULL, the prefill side's blocks to read; for a sliced or gathered request, the
// heads it carries, the decode-side request and its number of parts.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "json/json_reader.h"
#include "kv/pool/block_extent.h"
#include "kvx/kv_types.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

struct PlaceMsg {
  static constexpr std::string_view kType = "place";

  std::string req;
  std::uint64_t tokens = 0;
  std::uint64_t blocks = 0;
  std::vector<std::uint64_t> prefixHashes;
  KvMode mode = KvMode::kPush;
  bool layerwise = false;
  std::uint64_t leaseMs = 0;
  std::vector<BlockExtent> sourceBlocks;  // PULL only
  // Tensor-parallel slicing (see KvSlice): heads [srcHeadFirst, +headCount) of the prefill
  // pool into [dstHeadFirst, +headCount) of the decode pool (headCount 0: whole segments),
  // as one of `parts` parts of the decode-side request `group` (empty: req).
  std::uint32_t srcHeadFirst = 0;
  std::uint32_t dstHeadFirst = 0;
  std::uint32_t headCount = 0;
  std::string group;
  std::uint32_t parts = 1;
  // Which placement of `req` this is: the prefill side numbers every place it sends, and
  // every later message about the request names the number, so that one about an earlier
  // placement of the same id is not taken for this one: a "placed" of the session before a
  // lost link (the request was placed again since), an abort of blocks held from it, or an
  // earlier request of the same id. Sent when not 0.
  std::uint64_t attempt = 0;

  const std::string& groupId() const { return group.empty() ? req : group; }

  // The fields as a JSON object, without the type field (kv_message.h adds it). The slice
  // fields travel as one object "slice", left out for a whole request (no slice, no group,
  // one part).
  nlohmann::json toJson() const;
  // Reads the fields of a place. tokens, blocks and leaseMs are at least 1; a slice has 1 to
  // kMaxGatherParts parts and a group that is empty or a valid request id. PROTOCOL_ERROR
  // naming the first field that is wrong.
  static Result<PlaceMsg> fromJson(const jsonio::JsonReader& message);
};

}  // namespace kvx::kv::handoff
