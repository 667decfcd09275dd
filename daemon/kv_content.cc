#include "daemon/kv_content.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace kvx::daemon {
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
// Segments per copy batch when filling a layer of many blocks (32 KiB segments: 16 MiB).
constexpr std::uint64_t kBatchSegments = 512;

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

Result<std::vector<std::span<std::byte>>> SegmentStore::open(std::span<const KvSegmentRef> refs,
                                                             std::vector<std::byte>& buffer,
                                                             bool load) const {
  std::vector<std::span<std::byte>> views;
  views.reserve(refs.size());
  if (inPlace_) {
    for (const KvSegmentRef& r : refs) {
      KVX_ASSIGN_OR_RETURN(std::span<std::byte> view, inPlace_(r.block, r.layer, r.kv));
      views.push_back(view);
    }
    return views;
  }
  buffer.resize(refs.size() * segmentBytes_);
  if (load) KVX_RETURN_IF_ERROR(read_(refs, buffer));
  for (std::size_t i = 0; i < refs.size(); ++i) {
    views.push_back(std::span<std::byte>(buffer).subspan(i * segmentBytes_, segmentBytes_));
  }
  return views;
}

Status SegmentStore::commit(std::span<const KvSegmentRef> refs,
                            std::span<const std::byte> buffer) const {
  if (inPlace_) return Status::ok();
  return write_(refs, buffer);
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
      [&agent](std::span<const KvSegmentRef> refs, std::span<std::byte> out) {
        return agent.readSegments(refs, out, deadlineIn(kCopyTimeout));
      },
      [&agent](std::span<const KvSegmentRef> refs, std::span<const std::byte> in) {
        return agent.writeSegments(refs, in, deadlineIn(kCopyTimeout));
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
  std::vector<KvSegmentRef> refs;
  // Blocks go in batches of kBatchSegments segments: one copy round trip each for a pool
  // reached through copies.
  const std::uint64_t blocksPerBatch =
      std::max<std::uint64_t>(1, kBatchSegments / geometry_.kvCount);
  for (std::uint64_t first = 0; first < blocks.size(); first += blocksPerBatch) {
    const std::uint64_t end = std::min<std::uint64_t>(blocks.size(), first + blocksPerBatch);
    refs.clear();
    for (std::uint64_t index = first; index < end; ++index) {
      for (std::uint32_t kv = 0; kv < geometry_.kvCount; ++kv)
        refs.push_back({blocks[index], layer, kv});
    }
    auto views = segments.open(refs, buffer, partial);
    if (!views.isOk()) return views.status();
    for (std::size_t i = 0; i < refs.size(); ++i) {
      const std::span<std::byte> bytes = (*views)[i];
      auto piece = pieceBytes(bytes.size());
      if (!piece.isOk()) return piece.status();
      const std::uint64_t segment =
          segmentSeed(blockSeed(first + i / geometry_.kvCount), layer, refs[i].kv);
      std::uint8_t* base = asBytes(bytes);
      forEachPiece(geometry_, firstHead, endHead, *piece,
                   [&](std::uint32_t t, std::uint32_t h, std::size_t offset) {
                     fillPiece(base + offset, *piece,
                               pieceSeed(segment, t, geometry_.firstHead + h));
                     return true;
                   });
    }
    KVX_RETURN_IF_ERROR(segments.commit(refs, buffer));
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
  std::vector<KvSegmentRef> refs;
  for (std::uint32_t layer = 0; layer < geometry_.layers; ++layer) {
    for (std::uint32_t kv = 0; kv < geometry_.kvCount; ++kv) refs.push_back({block, layer, kv});
  }
  auto views = segments.open(refs, buffer, true);  // the whole block in one batch
  if (!views.isOk()) return views.status();
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const std::uint32_t layer = refs[i].layer, kv = refs[i].kv;
    const std::span<std::byte> bytes = (*views)[i];
    auto piece = pieceBytes(bytes.size());
    if (!piece.isOk()) return piece.status();
    const std::uint64_t segment = segmentSeed(seed, layer, kv);
    const std::uint8_t* base = asBytes(bytes);
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
  return std::string();
}

}  // namespace kvx::daemon
