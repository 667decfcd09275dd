// kvx-test-labels: unit serial
#include "daemon/kv_content.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <utility>
#include <vector>

using namespace kvx;
using namespace kvx::daemon;

namespace {

// A pool in plain memory: segment (block, layer, kv) at ((block * layers + layer) * kvCount +
// kv) * segmentBytes.
struct FakePool {
  FakePool(std::uint64_t blockCount, KvGeometry g, std::uint64_t segmentSize)
      : geometry(g),
        segmentBytes(segmentSize),
        bytes(blockCount * g.layers * g.kvCount * segmentSize),
        blocks(blockCount) {}

  SegmentAccessor accessor() {
    return [this](std::uint64_t block, std::uint32_t layer,
                  std::uint32_t kv) -> Result<std::span<std::byte>> {
      if (block >= blocks || layer >= geometry.layers || kv >= geometry.kvCount) {
        return invalidArgument("no segment (" + std::to_string(block) + ", " +
                               std::to_string(layer) + ", " + std::to_string(kv) + ")");
      }
      const std::uint64_t offset =
          ((block * geometry.layers + layer) * geometry.kvCount + kv) * segmentBytes;
      return std::span<std::byte>(bytes.data() + offset, segmentBytes);
    };
  }

  // The same pool as a device pool would be reached: through batched copies, counted in
  // segments and in batches. A batch with a bad ref copies nothing, as KvPool's does.
  SegmentStore copies() {
    SegmentAccessor at = accessor();
    auto resolve = [at, this](std::span<const KvSegmentRef> refs,
                              std::size_t length) -> Result<std::vector<std::span<std::byte>>> {
      if (length != refs.size() * segmentBytes)
        return invalidArgument("a batch of the wrong length");
      std::vector<std::span<std::byte>> spans;
      for (const KvSegmentRef& r : refs) {
        KVX_ASSIGN_OR_RETURN(std::span<std::byte> view, at(r.block, r.layer, r.kv));
        spans.push_back(view);
      }
      return spans;
    };
    return SegmentStore(
        segmentBytes,
        [this, resolve](std::span<const KvSegmentRef> refs, std::span<std::byte> out) -> Status {
          KVX_ASSIGN_OR_RETURN(auto from, resolve(refs, out.size()));
          for (std::size_t i = 0; i < from.size(); ++i) {
            std::copy(from[i].begin(), from[i].end(), out.begin() + i * segmentBytes);
          }
          reads += refs.size();
          ++readBatches;
          return Status::ok();
        },
        [this, resolve](std::span<const KvSegmentRef> refs,
                        std::span<const std::byte> in) -> Status {
          KVX_ASSIGN_OR_RETURN(auto to, resolve(refs, in.size()));
          for (std::size_t i = 0; i < to.size(); ++i) {
            std::copy_n(in.begin() + i * segmentBytes, segmentBytes, to[i].begin());
          }
          writes += refs.size();
          ++writeBatches;
          return Status::ok();
        });
  }

  KvGeometry geometry;
  std::uint64_t segmentBytes;
  std::vector<std::byte> bytes;
  std::uint64_t blocks;
  std::uint64_t reads = 0;  // segments
  std::uint64_t writes = 0;
  std::uint64_t readBatches = 0;
  std::uint64_t writeBatches = 0;
};

// One head per segment: 256-byte segments hold 16 pieces of 16 bytes.
const KvGeometry kGeometry{/*layers=*/3, /*kvCount=*/2, /*tokensPerBlock=*/16,
                           /*prefixChunkTokens=*/512};

}  // namespace

TEST_CASE("fnv1a and mix are the documented functions", "[kv_content]") {
  CHECK(fnv1a("") == 0xcbf29ce484222325ULL);
  CHECK(fnv1a("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(mix(1, 2) != mix(2, 1));
  CHECK(mix(1, 2) == mix(1, 2));
  CHECK(KvContent::segmentSeed(5, 0, 1) != KvContent::segmentSeed(5, 1, 0));
}

TEST_CASE("blocks of full shared chunks are seeded by the prefix hash", "[kv_content]") {
  // 1,024 tokens = two full 512-token chunks of 32 blocks each.
  const KvContent a("req-a", 1024, {7, 9}, kGeometry);
  const KvContent b("req-b", 1024, {7, 9}, kGeometry);
  CHECK(a.blockSeed(0) == mix(7, 0));
  CHECK(a.blockSeed(31) == mix(7, 31));
  CHECK(a.blockSeed(33) == mix(9, 1));
  for (std::uint64_t i = 0; i < 64; ++i) CHECK(a.blockSeed(i) == b.blockSeed(i));
}

TEST_CASE("partial chunks and chunks without a hash are private to the request", "[kv_content]") {
  // 1,000 tokens: chunk 1 holds 488 tokens, not full, so it is never shared.
  const KvContent partial("req-a", 1000, {7, 9}, kGeometry);
  CHECK(partial.blockSeed(31) == mix(7, 31));
  CHECK(partial.blockSeed(32) == mix(fnv1a("req-a"), 32));
  CHECK(partial.blockSeed(62) == mix(fnv1a("req-a"), 62));

  const KvContent fewer("req-c", 2048, {7}, kGeometry);
  CHECK(fewer.blockSeed(0) == mix(7, 0));
  CHECK(fewer.blockSeed(32) == mix(fnv1a("req-c"), 32));
  const KvContent other("req-d", 2048, {7}, kGeometry);
  CHECK(fewer.blockSeed(40) != other.blockSeed(40));
}

TEST_CASE("a block size that does not divide a chunk shares nothing", "[kv_content]") {
  KvGeometry odd = kGeometry;
  odd.tokensPerBlock = 24;
  const KvContent content("req", 4096, {1, 2, 3}, odd);
  CHECK(content.blockSeed(0) == mix(fnv1a("req"), 0));
}

TEST_CASE("filled blocks verify, and a changed byte is found", "[kv_content]") {
  FakePool pool(8, kGeometry, 256);
  const SegmentAccessor segments = pool.accessor();
  const std::vector<std::uint64_t> blocks{5, 1, 6};  // any pool blocks, in token order
  const KvContent content("req-1", 40, {}, kGeometry);
  REQUIRE(content.fillAll(segments, blocks).isOk());
  for (std::uint64_t i = 0; i < blocks.size(); ++i) {
    auto problem = content.checkBlock(segments, i, blocks[i]);
    REQUIRE(problem.isOk());
    CHECK(problem->empty());
  }
  // Block index 1 is pool block 1; corrupt its layer 2, V segment.
  (*segments(1, 2, 1))[100] ^= std::byte{0x01};
  auto problem = content.checkBlock(segments, 1, 1);
  REQUIRE(problem.isOk());
  // Byte 100 is byte 4 of token 6's piece.
  CHECK_THAT(*problem, Catch::StartsWith("layer 2 V token 6 head 0: byte at offset 4 is "));
  // The same bytes are not another index's content.
  auto misplaced = content.checkBlock(segments, 0, blocks[2]);
  REQUIRE(misplaced.isOk());
  CHECK_FALSE(misplaced->empty());
}

TEST_CASE("fillLayer writes one layer only", "[kv_content]") {
  FakePool pool(2, kGeometry, 64);
  const SegmentAccessor segments = pool.accessor();
  const std::vector<std::uint64_t> blocks{0, 1};
  const KvContent content("req-2", 32, {}, kGeometry);
  REQUIRE(content.fillLayer(segments, blocks, 1).isOk());
  auto problem = content.checkBlock(segments, 0, 0);
  REQUIRE(problem.isOk());
  CHECK_THAT(*problem, Catch::StartsWith("layer 0 K token 0 head 0:"));
  REQUIRE(content.fillLayer(segments, blocks, 0).isOk());
  REQUIRE(content.fillLayer(segments, blocks, 2).isOk());
  CHECK(content.checkBlock(segments, 1, 1)->empty());
}

TEST_CASE("a reused prefix block verifies for another request", "[kv_content]") {
  FakePool pool(70, kGeometry, 64);
  const SegmentAccessor segments = pool.accessor();
  std::vector<std::uint64_t> blocks(64);
  for (std::uint64_t i = 0; i < blocks.size(); ++i) blocks[i] = i;
  const KvContent first("req-first", 1024, {11, 12}, kGeometry);
  REQUIRE(first.fillAll(segments, blocks).isOk());
  // A later request shares chunk 0 only.
  const KvContent later("req-later", 1024, {11, 99}, kGeometry);
  CHECK(later.checkBlock(segments, 3, 3)->empty());
  CHECK_FALSE(later.checkBlock(segments, 40, 40)->empty());
}

TEST_CASE("accessor errors are returned", "[kv_content]") {
  FakePool pool(1, kGeometry, 64);
  const SegmentAccessor segments = pool.accessor();
  const std::vector<std::uint64_t> blocks{3};
  const KvContent content("req", 16, {}, kGeometry);
  CHECK(content.fillAll(segments, blocks).code() == StatusCode::kInvalidArgument);
  CHECK(content.checkBlock(segments, 0, 3).status().code() == StatusCode::kInvalidArgument);
}

namespace {

// Tensor-parallel pools of a model with 8 KV heads of 8 bytes (headDim 4, 2 bytes), 4 tokens
// per block, 2 layers.
constexpr std::uint32_t kHeads = 8;
constexpr std::uint32_t kHeadBytes = 8;
constexpr std::uint32_t kTokens = 4;

KvGeometry rankGeometry(std::uint32_t tpSize, std::uint32_t rank, bool tokenMajor) {
  const std::uint32_t heads = kHeads / tpSize;
  return KvGeometry{2, 2, kTokens, 512, heads, rank * heads, kHeads, tokenMajor};
}

FakePool rankPool(std::uint64_t blocks, const KvGeometry& g) {
  return FakePool(blocks, g, std::uint64_t{kTokens} * g.heads * kHeadBytes);
}

// The bytes of (token, local head) in segment (block, layer, kv) of `pool`.
std::span<std::byte> piece(FakePool& pool, std::uint64_t block, std::uint32_t layer,
                           std::uint32_t kv, std::uint32_t token, std::uint32_t head) {
  const KvGeometry& g = pool.geometry;
  const std::size_t index = g.tokenMajor ? std::size_t{token} * g.heads + head
                                         : std::size_t{head} * g.tokensPerBlock + token;
  return pool.accessor()(block, layer, kv)->subspan(index * kHeadBytes, kHeadBytes);
}

bool samePiece(std::span<std::byte> a, std::span<std::byte> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

// Copies the heads of `from` that `to` holds, piece by piece (what a sliced move does),
// for blocks [0, blocks) of both.
void moveSlice(FakePool& from, FakePool& to, std::uint64_t blocks) {
  const KvGeometry& f = from.geometry;
  const KvGeometry& t = to.geometry;
  const std::uint32_t first = std::max(f.firstHead, t.firstHead);
  const std::uint32_t end = std::min(f.firstHead + f.heads, t.firstHead + t.heads);
  for (std::uint64_t b = 0; b < blocks; ++b)
    for (std::uint32_t l = 0; l < f.layers; ++l)
      for (std::uint32_t kv = 0; kv < f.kvCount; ++kv)
        for (std::uint32_t token = 0; token < kTokens; ++token)
          for (std::uint32_t g = first; g < end; ++g) {
            auto source = piece(from, b, l, kv, token, g - f.firstHead);
            auto target = piece(to, b, l, kv, token, g - t.firstHead);
            std::copy(source.begin(), source.end(), target.begin());
          }
}

}  // namespace

TEST_CASE("a TP1 block and its TP2 and TP4 slices hold the same heads, in every layout",
          "[kv_content]") {
  const bool wholeTokenMajor = GENERATE(true, false);
  const bool rankTokenMajor = GENERATE(true, false);
  const std::uint32_t tpSize = GENERATE(2u, 4u);
  INFO("TP1 " << (wholeTokenMajor ? "NHD" : "HND") << ", TP" << tpSize << " "
              << (rankTokenMajor ? "NHD" : "HND"));
  const std::vector<std::uint64_t> blocks{0, 1, 2};
  FakePool whole = rankPool(3, rankGeometry(1, 0, wholeTokenMajor));
  REQUIRE(KvContent("req-tp", 40, {}, whole.geometry).fillAll(whole.accessor(), blocks).isOk());
  for (std::uint32_t rank = 0; rank < tpSize; ++rank) {
    FakePool part = rankPool(3, rankGeometry(tpSize, rank, rankTokenMajor));
    const KvContent content("req-tp", 40, {}, part.geometry);
    REQUIRE(content.fillAll(part.accessor(), blocks).isOk());
    std::size_t differing = 0;
    for (std::uint64_t b = 0; b < blocks.size(); ++b)
      for (std::uint32_t l = 0; l < 2; ++l)
        for (std::uint32_t kv = 0; kv < 2; ++kv)
          for (std::uint32_t t = 0; t < kTokens; ++t)
            for (std::uint32_t h = 0; h < part.geometry.heads; ++h) {
              const std::uint32_t global = part.geometry.firstHead + h;
              if (!samePiece(piece(part, b, l, kv, t, h), piece(whole, b, l, kv, t, global))) {
                ++differing;
              }
            }
    CHECK(differing == 0);
  }
}

TEST_CASE("decode ranks verify the heads that sliced moves brought them", "[kv_content]") {
  // Prefill TP2 (NHD) -> decode TP4 (HND), and prefill TP4 -> decode TP2: scatter and gather.
  const auto [prefillTp, decodeTp] = GENERATE(std::pair{2u, 4u}, std::pair{4u, 2u});
  INFO("prefill TP" << prefillTp << " -> decode TP" << decodeTp);
  const std::vector<std::uint64_t> blocks{0, 1};
  std::vector<FakePool> prefills, decodes;
  for (std::uint32_t r = 0; r < prefillTp; ++r) {
    prefills.push_back(rankPool(2, rankGeometry(prefillTp, r, true)));
    const KvContent content("prompt-3", 8, {}, prefills.back().geometry);
    REQUIRE(content.fillAll(prefills.back().accessor(), blocks).isOk());
  }
  for (std::uint32_t q = 0; q < decodeTp; ++q) {
    decodes.push_back(rankPool(2, rankGeometry(decodeTp, q, false)));
    for (FakePool& prefill : prefills) moveSlice(prefill, decodes.back(), 2);
    const KvContent content("prompt-3", 8, {}, decodes.back().geometry);
    for (std::uint64_t b = 0; b < blocks.size(); ++b) {
      auto problem = content.checkBlock(decodes.back().accessor(), b, b);
      REQUIRE(problem.isOk());
      CHECK(problem->empty());
    }
  }
  // Two heads swapped on their way to decode rank 1 are found, named by their global head.
  FakePool& rank1 = decodes[1];
  auto a = piece(rank1, 1, 1, 0, 2, 0);
  auto b = piece(rank1, 1, 1, 0, 2, 1);
  std::swap_ranges(a.begin(), a.end(), b.begin());
  const KvContent content("prompt-3", 8, {}, rank1.geometry);
  auto problem = content.checkBlock(rank1.accessor(), 1, 1);
  REQUIRE(problem.isOk());
  const std::string head = std::to_string(rank1.geometry.firstHead);
  CHECK_THAT(*problem, Catch::StartsWith("layer 1 K token 2 head " + head + ": byte at offset"));
}

TEST_CASE("fillLayer of some heads writes only those", "[kv_content]") {
  FakePool pool = rankPool(1, rankGeometry(2, 1, true));  // global heads 4-7
  const KvContent content("req", 4, {}, pool.geometry);
  const std::vector<std::uint64_t> blocks{0};
  for (std::uint32_t layer = 0; layer < 2; ++layer) {
    REQUIRE(content.fillLayer(pool.accessor(), blocks, layer, 2, 2).isOk());
  }
  auto problem = content.checkBlock(pool.accessor(), 0, 0);
  REQUIRE(problem.isOk());
  CHECK_THAT(*problem, Catch::StartsWith("layer 0 K token 0 head 4:"));
  for (std::uint32_t layer = 0; layer < 2; ++layer) {
    REQUIRE(content.fillLayer(pool.accessor(), blocks, layer, 0, 2).isOk());
  }
  CHECK(content.checkBlock(pool.accessor(), 0, 0)->empty());
  CHECK(content.fillLayer(pool.accessor(), blocks, 0, 3, 2).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a segment that is not tokens x heads pieces is an error", "[kv_content]") {
  KvGeometry g = rankGeometry(1, 0, true);
  FakePool pool(1, g, 100);  // not 4 tokens x 8 heads of equal size
  const KvContent content("req", 4, {}, g);
  const std::vector<std::uint64_t> blocks{0};
  CHECK(content.fillAll(pool.accessor(), blocks).code() == StatusCode::kInvalidArgument);
  CHECK(content.checkBlock(pool.accessor(), 0, 0).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a partial last word and odd piece sizes fill and verify", "[kv_content]") {
  KvGeometry g = rankGeometry(1, 0, false);
  FakePool pool(1, g, std::uint64_t{kTokens} * kHeads * 6);  // 6-byte pieces
  const KvContent content("req", 4, {}, g);
  const std::vector<std::uint64_t> blocks{0};
  REQUIRE(content.fillAll(pool.accessor(), blocks).isOk());
  CHECK(content.checkBlock(pool.accessor(), 0, 0)->empty());
  (*pool.accessor()(0, 1, 1))[6 * 9 + 5] ^= std::byte{0x80};  // piece 9 = head 2, token 1
  CHECK_THAT(*content.checkBlock(pool.accessor(), 0, 0),
             Catch::StartsWith("layer 1 V token 1 head 2: byte at offset 5"));
}

TEST_CASE("a pool reached through copies fills and verifies as one reached in place",
          "[kv_content]") {
  FakePool inPlace(8, kGeometry, 256);
  FakePool copied(8, kGeometry, 256);
  const SegmentStore store = copied.copies();
  CHECK_FALSE(store.inPlace());
  CHECK(SegmentStore(inPlace.accessor()).inPlace());
  const std::vector<std::uint64_t> blocks{5, 1, 6};
  const KvContent content("req-copy", 40, {}, kGeometry);
  REQUIRE(content.fillAll(inPlace.accessor(), blocks).isOk());
  REQUIRE(content.fillAll(store, blocks).isOk());
  CHECK(copied.bytes == inPlace.bytes);
  // A whole-segment fill writes without reading first.
  CHECK(copied.reads == 0);
  CHECK(copied.writes == blocks.size() * kGeometry.layers * kGeometry.kvCount);
  // One batch per layer (all blocks, K and V), and a check reads a whole block in one.
  CHECK(copied.writeBatches == kGeometry.layers);
  for (std::uint64_t i = 0; i < blocks.size(); ++i)
    CHECK(content.checkBlock(store, i, blocks[i])->empty());
  CHECK(copied.readBatches == blocks.size());
  (*copied.accessor()(6, 0, 1))[17] ^= std::byte{0x04};
  CHECK_THAT(*content.checkBlock(store, 2, 6), Catch::StartsWith("layer 0 V token 1 head 0:"));
}

TEST_CASE("filling some heads through copies keeps the other heads' bytes", "[kv_content]") {
  FakePool pool = rankPool(1, rankGeometry(2, 1, true));  // global heads 4-7
  const SegmentStore store = pool.copies();
  const KvContent content("req", 4, {}, pool.geometry);
  const std::vector<std::uint64_t> blocks{0};
  for (std::uint32_t layer = 0; layer < 2; ++layer) {
    REQUIRE(content.fillLayer(store, blocks, layer, 0, 2).isOk());
    REQUIRE(content.fillLayer(store, blocks, layer, 2, 2).isOk());
  }
  CHECK(pool.reads == 2 * 2 * 2);  // each partial fill of a segment read it first
  CHECK(content.checkBlock(store, 0, 0)->empty());
}

TEST_CASE("a copy that fails is returned", "[kv_content]") {
  FakePool pool(1, kGeometry, 64);
  const SegmentStore store = pool.copies();
  const std::vector<std::uint64_t> blocks{3};  // not a block of the pool
  const KvContent content("req", 16, {}, kGeometry);
  CHECK(content.fillAll(store, blocks).code() == StatusCode::kInvalidArgument);
  CHECK(content.checkBlock(store, 0, 3).status().code() == StatusCode::kInvalidArgument);
}
