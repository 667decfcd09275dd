#pragma once

// Byte-range pairs for a move of some heads of some blocks between two pools. A head range
// of a token-major segment is one strided piece per token, of an HND segment one piece; the
// two sides' pieces of a segment are zipped in order and split where their lengths differ,
// so a 2-head pool and a 1-head slice of a 4-head pool pair token by token. Used for sliced
// moves, which no prepared list covers (a list per head range would hold one entry per
// token of every segment). Stateless, thread-safe.

#include <cstdint>
#include <span>
#include <vector>

#include "kv/pool/head_slice.h"
#include "kv/pool/pool_layout.h"

namespace kvx::kv {

// Two equally long ranges, one in each pool.
struct RangePair {
  TensorRange local;
  TensorRange remote;
};

// Appends the pairs moving heads `slice` of layers [firstLayer, firstLayer + layerCount) of
// localBlocks[i] <-> remoteBlocks[i], walking segments in the local pool's memory order.
// INVALID_ARGUMENT when the lists differ in length, a block, layer or head is outside either
// pool, or the pools' segment shapes do not line up (different layers, head size, dtype,
// tokens per block, or a token-major pool with an HND one). A whole slice needs equal heads.
Status appendSlicePairs(const PoolLayout& local, const PoolLayout& remote,
                        std::span<const std::uint64_t> localBlocks,
                        std::span<const std::uint64_t> remoteBlocks, std::uint32_t firstLayer,
                        std::uint32_t layerCount, HeadSlice slice, std::vector<RangePair>& out);

}  // namespace kvx::kv
