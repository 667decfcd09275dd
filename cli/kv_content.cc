#include "cli/kv_content.h"

#include "examples/pair_transfer/pattern.h"

namespace kvx::cli {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::span<std::uint8_t> asBytes(std::span<std::byte> bytes) {
  return {reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size()};
}

}  // namespace

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) { return splitmix64(a ^ splitmix64(b)); }

SegmentAccessor segmentsOf(const KvAgent& agent) {
  return [&agent](std::uint64_t block, std::uint32_t layer, std::uint32_t kv) {
    return agent.segment(block, layer, kv);
  };
}

KvGeometry geometryOf(const KvPoolInfo& pool, std::uint32_t prefixChunkTokens) {
  return KvGeometry{pool.layers, pool.kvCount, pool.tokensPerBlock, prefixChunkTokens};
}

KvContent::KvContent(std::string_view requestId, std::uint64_t tokens,
                     std::vector<std::uint64_t> prefixHashes, KvGeometry geometry)
    : requestSeed_(fnv1a(requestId)),
      tokens_(tokens),
      prefixHashes_(std::move(prefixHashes)),
      geometry_(geometry),
      blocksPerChunk_(geometry.tokensPerBlock != 0 &&
                              geometry.prefixChunkTokens % geometry.tokensPerBlock == 0
                          ? geometry.prefixChunkTokens / geometry.tokensPerBlock
                          : 0) {}

std::uint64_t KvContent::blockSeed(std::uint64_t index) const {
  if (blocksPerChunk_ != 0) {
    const std::uint64_t chunk = index / blocksPerChunk_;
    const bool fullChunk = (chunk + 1) * geometry_.prefixChunkTokens <= tokens_;
    if (chunk < prefixHashes_.size() && fullChunk) {
      return mix(prefixHashes_[chunk], index % blocksPerChunk_);
    }
  }
  return mix(requestSeed_, index);
}

std::uint64_t KvContent::segmentSeed(std::uint64_t blockSeed, std::uint32_t layer,
                                     std::uint32_t kv) {
  return mix(mix(blockSeed, layer), kv);
}

Status KvContent::fillLayer(const SegmentAccessor& segments, std::span<const std::uint64_t> blocks,
                            std::uint32_t layer) const {
  for (std::uint64_t index = 0; index < blocks.size(); ++index) {
    const std::uint64_t seed = blockSeed(index);
    for (std::uint32_t kv = 0; kv < geometry_.kvCount; ++kv) {
      auto bytes = segments(blocks[index], layer, kv);
      if (!bytes.isOk()) return bytes.status();
      pair_transfer::fillPattern(asBytes(*bytes), 0, segmentSeed(seed, layer, kv));
    }
  }
  return Status::ok();
}

Status KvContent::fillAll(const SegmentAccessor& segments,
                          std::span<const std::uint64_t> blocks) const {
  for (std::uint32_t layer = 0; layer < geometry_.layers; ++layer) {
    KVX_RETURN_IF_ERROR(fillLayer(segments, blocks, layer));
  }
  return Status::ok();
}

Result<std::string> KvContent::checkBlock(const SegmentAccessor& segments, std::uint64_t index,
                                          std::uint64_t block) const {
  const std::uint64_t seed = blockSeed(index);
  for (std::uint32_t layer = 0; layer < geometry_.layers; ++layer) {
    for (std::uint32_t kv = 0; kv < geometry_.kvCount; ++kv) {
      auto bytes = segments(block, layer, kv);
      if (!bytes.isOk()) return bytes.status();
      std::string problem =
          pair_transfer::checkPattern(asBytes(*bytes), 0, segmentSeed(seed, layer, kv));
      if (!problem.empty()) {
        return "layer " + std::to_string(layer) + (kv == 0 ? " K: " : " V: ") + problem;
      }
    }
  }
  return std::string();
}

}  // namespace kvx::cli
