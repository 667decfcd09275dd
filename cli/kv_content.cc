#include "cli/kv_content.h"

#include <chrono>
#include <cstring>

namespace kvx::cli {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint8_t* asBytes(std::span<std::byte> bytes) {
  return reinterpret_cast<std::uint8_t*>(bytes.data());
}

constexpr std::uint64_t kWordStep = 0x9e3779b97f4a7c15ULL;
constexpr auto kCopyTimeout = std::chrono::seconds(10);

// Word i of a piece is seed + i * kWordStep (little-endian; a partial last word keeps its low
// bytes). One addition per 8 bytes: the seed, unique per piece, is what carries the identity.
void fillPiece(std::uint8_t* out, std::size_t bytes, std::uint64_t seed) {
  std::uint64_t word = seed;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8, word += kWordStep) std::memcpy(out + i, &word, 8);
  if (i < bytes) std::memcpy(out + i, &word, bytes - i);
}

// "" when the piece holds its content, else the first byte that differs.
std::string checkPiece(const std::uint8_t* in, std::size_t bytes, std::uint64_t seed) {
  std::uint64_t word = seed;
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8, word += kWordStep) {
    if (std::memcmp(in + i, &word, 8) != 0) break;
  }
  if (i >= bytes) return {};
  std::uint8_t expected[8];
  std::memcpy(expected, &word, 8);
  const std::size_t end = std::min(bytes, i + 8);
  for (std::size_t at = i; at < end; ++at) {
    if (in[at] != expected[at - i]) {
      return "byte at offset " + std::to_string(at) + " is " + std::to_string(in[at]) +
             ", expected " + std::to_string(expected[at - i]);
    }
  }
  return {};
}

// Calls f(token, local head, byte offset) for the pieces of local heads [first, end) of a
// segment whose pieces are `piece` bytes, in memory order; stops when f returns false.
template <typename F>
bool forEachPiece(const KvGeometry& g, std::uint32_t first, std::uint32_t end, std::size_t piece,
                  F&& f) {
  if (g.tokenMajor) {
    for (std::uint32_t t = 0; t < g.tokensPerBlock; ++t) {
      for (std::uint32_t h = first; h < end; ++h) {
        if (!f(t, h, (std::size_t{t} * g.heads + h) * piece)) return false;
      }
    }
    return true;
  }
  for (std::uint32_t h = first; h < end; ++h) {
    for (std::uint32_t t = 0; t < g.tokensPerBlock; ++t) {
      if (!f(t, h, (std::size_t{h} * g.tokensPerBlock + t) * piece)) return false;
    }
  }
  return true;
}

std::string segmentName(std::uint32_t layer, std::uint32_t kv) {
  return "layer " + std::to_string(layer) + (kv == 0 ? " K" : " V");
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

SegmentStore::SegmentStore(SegmentAccessor inPlace) : inPlace_(std::move(inPlace)) {}

SegmentStore::SegmentStore(std::uint64_t segmentBytes, SegmentReader read, SegmentWriter write)
    : segmentBytes_(segmentBytes), read_(std::move(read)), write_(std::move(write)) {}

Result<std::span<std::byte>> SegmentStore::open(std::uint64_t block, std::uint32_t layer,
                                                std::uint32_t kv, std::vector<std::byte>& buffer,
                                                bool load) const {
  if (inPlace_) return inPlace_(block, layer, kv);
  buffer.resize(segmentBytes_);
  const std::span<std::byte> bytes(buffer);
  if (load) KVX_RETURN_IF_ERROR(read_(block, layer, kv, bytes));
  return bytes;
}

Status SegmentStore::commit(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                            std::span<const std::byte> bytes) const {
  if (inPlace_) return Status::ok();
  return write_(block, layer, kv, bytes);
}

SegmentStore segmentsOf(KvAgent& agent) {
  // Host pools are filled and checked in place: a copy per segment would double the CPU
  // the content costs. A pool whose segment the host cannot address (CUDA memory) refuses
  // segment() and is copied instead.
  if (agent.segment(0, 0, 0).isOk()) {
    return SegmentStore([&agent](std::uint64_t block, std::uint32_t layer, std::uint32_t kv) {
      return agent.segment(block, layer, kv);
    });
  }
  return SegmentStore(
      agent.pool().segmentBytes,
      [&agent](std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
               std::span<std::byte> out) {
        return agent.readSegment(block, layer, kv, out, deadlineIn(kCopyTimeout));
      },
      [&agent](std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
               std::span<const std::byte> in) {
        return agent.writeSegment(block, layer, kv, in, deadlineIn(kCopyTimeout));
      });
}

KvGeometry geometryOf(const KvPoolInfo& pool, std::uint32_t prefixChunkTokens,
                      std::uint32_t firstHead, std::uint32_t heads, std::uint32_t totalHeads) {
  return KvGeometry{pool.layers, pool.kvCount, pool.tokensPerBlock, prefixChunkTokens,
                    heads,       firstHead,    totalHeads,          pool.layout != "hnd"};
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

std::uint64_t KvContent::pieceSeed(std::uint64_t segmentSeed, std::uint32_t token,
                                   std::uint32_t globalHead) const {
  return mix(segmentSeed, std::uint64_t{token} * geometry_.totalHeads + globalHead);
}

Result<std::size_t> KvContent::pieceBytes(std::size_t segmentBytes) const {
  const std::size_t pieces = std::size_t{geometry_.tokensPerBlock} * geometry_.heads;
  if (pieces == 0 || segmentBytes % pieces != 0) {
    return invalidArgument("a segment of " + std::to_string(segmentBytes) + " bytes is not " +
                           std::to_string(geometry_.tokensPerBlock) + " tokens x " +
                           std::to_string(geometry_.heads) +
                           " heads of equal size; the content geometry does not match the pool");
  }
  return segmentBytes / pieces;
}

Status KvContent::fillLayer(const SegmentStore& segments, std::span<const std::uint64_t> blocks,
                            std::uint32_t layer, std::uint32_t firstHead,
                            std::uint32_t headCount) const {
  if (firstHead > geometry_.heads || headCount > geometry_.heads - firstHead) {
    return invalidArgument("heads [" + std::to_string(firstHead) + ", +" +
                           std::to_string(headCount) + ") are not within the pool's " +
                           std::to_string(geometry_.heads));
  }
  const std::uint32_t endHead = firstHead + headCount;
  const bool partial = headCount != geometry_.heads;
  std::vector<std::byte> buffer;
  for (std::uint64_t index = 0; index < blocks.size(); ++index) {
    const std::uint64_t seed = blockSeed(index);
    for (std::uint32_t kv = 0; kv < geometry_.kvCount; ++kv) {
      auto bytes = segments.open(blocks[index], layer, kv, buffer, partial);
      if (!bytes.isOk()) return bytes.status();
      auto piece = pieceBytes(bytes->size());
      if (!piece.isOk()) return piece.status();
      const std::uint64_t segment = segmentSeed(seed, layer, kv);
      std::uint8_t* base = asBytes(*bytes);
      forEachPiece(geometry_, firstHead, endHead, *piece,
                   [&](std::uint32_t t, std::uint32_t h, std::size_t offset) {
                     fillPiece(base + offset, *piece,
                               pieceSeed(segment, t, geometry_.firstHead + h));
                     return true;
                   });
      KVX_RETURN_IF_ERROR(segments.commit(blocks[index], layer, kv, *bytes));
    }
  }
  return Status::ok();
}

Status KvContent::fillAll(const SegmentStore& segments,
                          std::span<const std::uint64_t> blocks) const {
  for (std::uint32_t layer = 0; layer < geometry_.layers; ++layer) {
    KVX_RETURN_IF_ERROR(fillLayer(segments, blocks, layer));
  }
  return Status::ok();
}

Result<std::string> KvContent::checkBlock(const SegmentStore& segments, std::uint64_t index,
                                          std::uint64_t block) const {
  const std::uint64_t seed = blockSeed(index);
  std::vector<std::byte> buffer;
  for (std::uint32_t layer = 0; layer < geometry_.layers; ++layer) {
    for (std::uint32_t kv = 0; kv < geometry_.kvCount; ++kv) {
      auto bytes = segments.open(block, layer, kv, buffer, true);
      if (!bytes.isOk()) return bytes.status();
      auto piece = pieceBytes(bytes->size());
      if (!piece.isOk()) return piece.status();
      const std::uint64_t segment = segmentSeed(seed, layer, kv);
      const std::uint8_t* base = asBytes(*bytes);
      std::string problem;
      forEachPiece(geometry_, 0, geometry_.heads, *piece,
                   [&](std::uint32_t t, std::uint32_t h, std::size_t offset) {
                     const std::uint32_t global = geometry_.firstHead + h;
                     problem = checkPiece(base + offset, *piece, pieceSeed(segment, t, global));
                     if (problem.empty()) return true;
                     problem = segmentName(layer, kv) + " token " + std::to_string(t) + " head " +
                               std::to_string(global) + ": " + problem;
                     return false;
                   });
      if (!problem.empty()) return problem;
    }
  }
  return std::string();
}

}  // namespace kvx::cli
