#pragma once

// The deterministic KV-cache content that `kvx agent` prefill agents write and decode agents
// verify, so that every byte a request moved is checked on arrival without any side channel.
//
// Block i (0-based, in token order) of request R with `tokens` tokens and prefix hashes H,
// with blocksPerChunk = prefixChunkTokens / tokensPerBlock:
//   - chunk c = i / blocksPerChunk is shared (c < H.size() and the chunk is full, i.e.
//     (c + 1) * prefixChunkTokens <= tokens): seed = mix(H[c], i % blocksPerChunk). Equal
//     prefixes hold equal bytes, so a block reused from a decode agent's prefix cache verifies
//     for every request that shares it.
//   - otherwise: seed = mix(fnv1a(R), i).
// Segment (layer, kv) of a block holds pair_transfer::fillPattern(bytes, 0,
// mix(mix(seed, layer), kv)).
// Pure functions over a SegmentAccessor; safe from any thread for distinct blocks.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/kv_agent.h"
#include "kvx/result.h"

namespace kvx::cli {

std::uint64_t fnv1a(std::string_view text);
// A 64-bit mixing function (splitmix64 finaliser over both inputs): order matters.
std::uint64_t mix(std::uint64_t a, std::uint64_t b);

// The bytes of segment (block, layer, kv) of a pool.
using SegmentAccessor = std::function<Result<std::span<std::byte>>(
    std::uint64_t block, std::uint32_t layer, std::uint32_t kv)>;
// KvAgent::segment of `agent`, which must outlive the accessor.
SegmentAccessor segmentsOf(const KvAgent& agent);

// The geometry the content depends on.
struct KvGeometry {
  std::uint32_t layers = 0;
  std::uint32_t kvCount = 2;
  std::uint32_t tokensPerBlock = 16;
  std::uint32_t prefixChunkTokens = 512;
};
KvGeometry geometryOf(const KvPoolInfo& pool, std::uint32_t prefixChunkTokens);

// The content of one request's blocks.
class KvContent {
 public:
  KvContent(std::string_view requestId, std::uint64_t tokens,
            std::vector<std::uint64_t> prefixHashes, KvGeometry geometry);

  // Seed of block `index` (token order), as defined above.
  std::uint64_t blockSeed(std::uint64_t index) const;
  static std::uint64_t segmentSeed(std::uint64_t blockSeed, std::uint32_t layer, std::uint32_t kv);
  const KvGeometry& geometry() const { return geometry_; }

  // Fills layer `layer` (K and V) of every block; blocks[i] is the pool block of index i.
  Status fillLayer(const SegmentAccessor& segments, std::span<const std::uint64_t> blocks,
                   std::uint32_t layer) const;
  Status fillAll(const SegmentAccessor& segments, std::span<const std::uint64_t> blocks) const;

  // Checks every segment of block index `index` (pool block `block`): "" when it holds its
  // content, else "layer L K|V: <what differs>". Errors: the accessor's.
  Result<std::string> checkBlock(const SegmentAccessor& segments, std::uint64_t index,
                                 std::uint64_t block) const;

 private:
  std::uint64_t requestSeed_;
  std::uint64_t tokens_;
  std::vector<std::uint64_t> prefixHashes_;
  KvGeometry geometry_;
  std::uint64_t blocksPerChunk_;  // 0 when tokensPerBlock does not divide a chunk
};

}  // namespace kvx::cli
