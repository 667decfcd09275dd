#pragma once

// The deterministic KV-cache content that `kvx agent` prefill agents write and decode agents
// verify, so that every byte a request moved is checked on arrival without any side channel.
// It is a function of the model's tokens and global heads, not of a pool's layout or
// tensor-parallel split, so that a decode rank verifies exactly its heads whatever the
// prefill side's TP size and layout were.
//
// Block i (0-based, in token order) of request R with `tokens` tokens and prefix hashes H,
// with blocksPerChunk = prefixChunkTokens / tokensPerBlock:
//   - chunk c = i / blocksPerChunk is shared (c < H.size() and the chunk is full, i.e.
//     (c + 1) * prefixChunkTokens <= tokens): seed = mix(H[c], i % blocksPerChunk). Equal
//     prefixes hold equal bytes, so a block reused from a decode agent's prefix cache verifies
//     for every request that shares it.
//   - otherwise: seed = mix(fnv1a(R), i).
// R is the request's id as the decode side sees it: a sliced request's destinationId.
// Segment (layer, kv) of a block has seed s = mix(mix(seed, layer), kv). Its piece of (token
// t, global head g), headDim x dtype bytes, has seed p = mix(s, t * totalHeads + g) and holds
// the little-endian words p + i * 0x9e3779b97f4a7c15 (i = 0, 1, ...; a partial last word keeps
// its low bytes): one addition per 8 bytes, so that filling and checking keep up with the
// data path, while the per-piece seed catches a missing, stale or misplaced piece. The
// pieces lie as the pool's layout orders them: [token][head] in token-major layouts (NHD,
// blocks-first, cross-layer), [head][token] in HND.
// Pure functions over a SegmentStore; safe from any thread for distinct blocks.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/kv_agent.h"
#include "kvx/result.h"

namespace kvx::daemon {

std::uint64_t fnv1a(std::string_view text);
// A 64-bit mixing function (splitmix64 finaliser over both inputs): order matters.
std::uint64_t mix(std::uint64_t a, std::uint64_t b);

// The bytes of segment (block, layer, kv) of a pool the host can address.
using SegmentAccessor = std::function<Result<std::span<std::byte>>(
    std::uint64_t block, std::uint32_t layer, std::uint32_t kv)>;
// Copies segments refs[i] of a pool out into [i * segment, +segment) of `out`, or from `in`
// into them (exactly refs.size() segments' bytes): one batch, so that a device pool pays one
// copy-engine round trip for many segments.
using SegmentReader =
    std::function<Status(std::span<const KvSegmentRef> refs, std::span<std::byte> out)>;
using SegmentWriter =
    std::function<Status(std::span<const KvSegmentRef> refs, std::span<const std::byte> in)>;

// How KvContent reaches a pool's segments: in place through an accessor (no copy: host
// pools), or through a host buffer that a reader and a writer copy out of and into the pool
// (pools the host cannot address: CUDA memory). Filling some heads of a copied segment reads
// it first, so that its other heads keep their bytes, as they do in place.
// Immutable; safe from any thread when its functions are.
class SegmentStore {
 public:
  // An accessor is an in-place store.
  SegmentStore(SegmentAccessor inPlace);  // NOLINT(google-explicit-constructor)
  SegmentStore(std::uint64_t segmentBytes, SegmentReader read, SegmentWriter write);

  bool inPlace() const { return static_cast<bool>(inPlace_); }
  // The bytes to read or fill of each segment of `refs`: the segments themselves, or pieces
  // of `buffer` (resized to refs.size() segments) holding copies of them when `load` (else
  // unspecified bytes).
  Result<std::vector<std::span<std::byte>>> open(std::span<const KvSegmentRef> refs,
                                                 std::vector<std::byte>& buffer, bool load) const;
  // After filling what open() returned: copies `buffer` into the pool (nothing in place).
  Status commit(std::span<const KvSegmentRef> refs, std::span<const std::byte> buffer) const;

 private:
  SegmentAccessor inPlace_;
  std::uint64_t segmentBytes_ = 0;
  SegmentReader read_;
  SegmentWriter write_;
};

// The segments of `agent`'s pool, which must outlive the store: in place (KvAgent::segment)
// when the host can address them (host pools), else copied with KvAgent::readSegment and
// writeSegments (CUDA pools; each batch bounded by a 10 s deadline).
SegmentStore segmentsOf(KvAgent& agent);

// The geometry the content depends on. A segment holds tokensPerBlock x heads pieces of equal
// size (segment bytes / (tokensPerBlock x heads): one head of one token).
struct KvGeometry {
  std::uint32_t layers = 0;
  std::uint32_t kvCount = 2;
  std::uint32_t tokensPerBlock = 16;
  std::uint32_t prefixChunkTokens = 512;
  std::uint32_t heads = 1;       // KV heads in this pool's segments (one TP rank's)
  std::uint32_t firstHead = 0;   // the global number of this pool's head 0
  std::uint32_t totalHeads = 1;  // the model's KV heads, all ranks together
  bool tokenMajor = true;        // [token][head][dim]; false: HND's [head][token][dim]
};
// A pool holding global heads [firstHead, firstHead + heads) of a model with totalHeads.
KvGeometry geometryOf(const KvPoolInfo& pool, std::uint32_t prefixChunkTokens,
                      std::uint32_t firstHead, std::uint32_t heads, std::uint32_t totalHeads);

// The content of one request's blocks.
class KvContent {
 public:
  KvContent(std::string_view requestId, std::uint64_t tokens,
            std::vector<std::uint64_t> prefixHashes, KvGeometry geometry);

  // Seed of block `index` (token order), as defined above.
  std::uint64_t blockSeed(std::uint64_t index) const;
  static std::uint64_t segmentSeed(std::uint64_t blockSeed, std::uint32_t layer, std::uint32_t kv);
  // Seed of the piece of (token, global head) of a segment.
  std::uint64_t pieceSeed(std::uint64_t segmentSeed, std::uint32_t token,
                          std::uint32_t globalHead) const;
  const KvGeometry& geometry() const { return geometry_; }

  // Fills layer `layer` (K and V) of every block; blocks[i] is the pool block of index i.
  // INVALID_ARGUMENT when a segment's size is not tokensPerBlock x heads equal pieces.
  Status fillLayer(const SegmentStore& segments, std::span<const std::uint64_t> blocks,
                   std::uint32_t layer) const {
    return fillLayer(segments, blocks, layer, 0, geometry_.heads);
  }
  // Only the pool's local heads [firstHead, firstHead + headCount) (those a sliced request
  // moves); INVALID_ARGUMENT also when they are not within the pool's heads.
  Status fillLayer(const SegmentStore& segments, std::span<const std::uint64_t> blocks,
                   std::uint32_t layer, std::uint32_t firstHead, std::uint32_t headCount) const;
  Status fillAll(const SegmentStore& segments, std::span<const std::uint64_t> blocks) const;

  // Checks every segment of block index `index` (pool block `block`): "" when it holds its
  // content, else "layer L K|V token T head G: <what differs>" (G global). Errors: the
  // store's, or a segment of the wrong size.
  Result<std::string> checkBlock(const SegmentStore& segments, std::uint64_t index,
                                 std::uint64_t block) const;

 private:
  // The size of one piece of `segment`, or INVALID_ARGUMENT.
  Result<std::size_t> pieceBytes(std::size_t segmentBytes) const;

  std::uint64_t requestSeed_;
  std::uint64_t tokens_;
  std::vector<std::uint64_t> prefixHashes_;
  KvGeometry geometry_;
  std::uint64_t blocksPerChunk_;  // 0 when tokensPerBlock does not divide a chunk
};

}  // namespace kvx::daemon
