// kvx-test-labels: unit serial
#include "kv/pool/pool_description.h"

#include <catch2/catch.hpp>
#include <utility>

using namespace kvx;
using namespace kvx::kv;

namespace {

constexpr KvLayout kTokenMajor[] = {KvLayout::kNHD, KvLayout::kBlocksFirst, KvLayout::kCrossLayer};

PoolDescription description(ModelShape shape, KvLayout layout, std::uint64_t blocks) {
  PoolDescription out;
  const std::uint32_t tensors = layout == KvLayout::kCrossLayer ? 1 : shape.layers;
  out.shape = std::move(shape);
  out.layout = layout;
  out.blocks = blocks;
  for (std::uint32_t t = 0; t < tensors; ++t) out.tensorRegions.push_back(RegionId(t + 1));
  return out;
}

PoolDescription llama(KvLayout layout, std::uint64_t blocks = 1024) {
  return description(builtinShape("llama3-8b").value(), layout, blocks);
}

void checkRefused(const PoolDescription& local, const PoolDescription& remote,
                  const std::string& reason) {
  Status status = checkCompatible(local, remote);
  INFO(status.toString());
  CHECK(status.code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(status.message(), Catch::Contains(reason));
  CHECK_THAT(status.message(), Catch::Contains("local pool " + describe(local)));
  CHECK_THAT(status.message(), Catch::Contains("peer pool " + describe(remote)));
}

}  // namespace

TEST_CASE("describe names the shape, layout and blocks", "[kv]") {
  CHECK(describe(llama(KvLayout::kNHD)) ==
        "llama3-8b: 32 layers x 8 heads x 128 x 2 B, 16 tokens/block, nhd, 1024 blocks");
  CHECK(describe(description(builtinShape("deepseek-v3").value(), KvLayout::kCrossLayer, 7)) ==
        "deepseek-v3: 61 layers x 1 latent x 576 x 2 B, 64 tokens/block, cross-layer, 7 blocks");
}

TEST_CASE("equal shapes with token-major layouts are compatible in any mix", "[kv]") {
  for (KvLayout a : kTokenMajor) {
    for (KvLayout b : kTokenMajor) {
      INFO(toString(a) << " / " << toString(b));
      // Block counts and region ids are each side's own business.
      CHECK(checkCompatible(llama(a, 100), llama(b, 7)).isOk());
    }
  }
  CHECK(checkCompatible(llama(KvLayout::kHND), llama(KvLayout::kHND, 3)).isOk());
  // MLA pools too.
  const ModelShape mla = builtinShape("deepseek-v3").value();
  CHECK(checkCompatible(description(mla, KvLayout::kNHD, 4),
                        description(mla, KvLayout::kCrossLayer, 9))
            .isOk());
}

TEST_CASE("the model name alone does not make pools incompatible", "[kv]") {
  PoolDescription renamed = llama(KvLayout::kNHD);
  renamed.shape.name = "my-llama";
  CHECK(checkCompatible(llama(KvLayout::kNHD), renamed).isOk());
}

TEST_CASE("each differing field is refused with both descriptions", "[kv]") {
  const PoolDescription local = llama(KvLayout::kNHD);
  auto changed = [&](auto&& change) {
    PoolDescription out = local;
    change(out.shape);
    return out;
  };
  checkRefused(local, changed([](ModelShape& s) { s.layers = 16; }), "layers differ");
  checkRefused(local, changed([](ModelShape& s) { s.kvHeads = 4; }), "different heads per rank");
  checkRefused(local, changed([](ModelShape& s) { s.headDim = 64; }), "head sizes differ");
  checkRefused(local, changed([](ModelShape& s) { s.dtypeBytes = 1; }), "dtype sizes differ");
  checkRefused(local, changed([](ModelShape& s) { s.tokensPerBlock = 32; }),
               "tokens per block differ");
  checkRefused(local, changed([](ModelShape& s) { s.mla = true; }),
               "one pool is MLA and the other is not");
  // Refusal is symmetric.
  checkRefused(changed([](ModelShape& s) { s.headDim = 64; }), local, "head sizes differ");
}

TEST_CASE("token-major layouts and HND are refused both ways", "[kv]") {
  for (KvLayout tokenMajor : kTokenMajor) {
    INFO(toString(tokenMajor));
    checkRefused(llama(tokenMajor), llama(KvLayout::kHND), "token-major vs hnd");
    checkRefused(llama(KvLayout::kHND), llama(tokenMajor), "token-major vs hnd");
  }
}

TEST_CASE("validateDescription accepts valid descriptions", "[kv]") {
  for (KvLayout layout :
       {KvLayout::kNHD, KvLayout::kHND, KvLayout::kBlocksFirst, KvLayout::kCrossLayer}) {
    CHECK(validateDescription(llama(layout)).isOk());
    CHECK(validateDescription(llama(layout, 1)).isOk());
  }
  CHECK(validateDescription(description(builtinShape("deepseek-v3").value(), KvLayout::kNHD, 5))
            .isOk());
  // 2^26 - 1 blocks x 32 layers x 2 = 2^32 - 64 segments: still addressable.
  CHECK(validateDescription(llama(KvLayout::kNHD, (1ull << 26) - 1)).isOk());
}

TEST_CASE("validateDescription errors", "[kv]") {
  auto refused = [](const PoolDescription& pool, const std::string& needle) {
    Status status = validateDescription(pool);
    INFO(status.toString());
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains(needle));
  };
  SECTION("an invalid shape") {
    const std::pair<const char*, std::uint32_t ModelShape::*> fields[] = {
        {"layers", &ModelShape::layers},
        {"kvHeads", &ModelShape::kvHeads},
        {"headDim", &ModelShape::headDim},
        {"dtypeBytes", &ModelShape::dtypeBytes},
        {"tokensPerBlock", &ModelShape::tokensPerBlock}};
    for (const auto& [field, member] : fields) {
      PoolDescription pool = llama(KvLayout::kCrossLayer);
      pool.shape.*member = 0;
      refused(pool, std::string(field) + " must be positive");
    }
    PoolDescription unnamed = llama(KvLayout::kNHD);
    unnamed.shape.name.clear();
    refused(unnamed, "name");
  }
  SECTION("zero blocks") { refused(llama(KvLayout::kNHD, 0), "at least one block"); }
  SECTION("the wrong number of regions") {
    PoolDescription pool = llama(KvLayout::kNHD);
    pool.tensorRegions.pop_back();
    refused(pool, "lists 31 tensor regions; layout nhd has 32");
    pool.tensorRegions.resize(33);
    refused(pool, "lists 33 tensor regions; layout nhd has 32");
    pool.tensorRegions.clear();
    refused(pool, "lists 0 tensor regions");
    PoolDescription cross = llama(KvLayout::kCrossLayer);
    cross.tensorRegions.push_back(RegionId(9));
    refused(cross, "lists 2 tensor regions; layout cross-layer has 1");
    PoolDescription blocksFirst = llama(KvLayout::kBlocksFirst);
    blocksFirst.tensorRegions.resize(1);
    refused(blocksFirst, "lists 1 tensor regions; layout blocks-first has 32");
  }
  SECTION("more segments than a 32-bit index addresses") {
    refused(llama(KvLayout::kNHD, 1ull << 26), "pool has 4294967296 segments");
    refused(llama(KvLayout::kCrossLayer, 1ull << 40), "segments");
  }
  SECTION("a pool whose size overflows 64 bits") {
    refused(llama(KvLayout::kNHD, 1ull << 60), "does not fit in 64 bits");
  }
}

TEST_CASE("pools that differ only in heads per rank can exchange head slices", "[kv]") {
  PoolDescription tp4 = llama(KvLayout::kHND);
  tp4.shape.kvHeads = 2;
  PoolDescription tp8 = llama(KvLayout::kHND);
  tp8.shape.kvHeads = 1;
  CHECK(checkSliceCompatible(tp4, tp8).isOk());
  CHECK_FALSE(checkCompatible(tp4, tp8).isOk());
  tp8.shape.headDim = 64;
  CHECK_THAT(checkSliceCompatible(tp4, tp8).message(), Catch::Contains("head sizes differ"));
  CHECK_THAT(checkSliceCompatible(tp4, llama(KvLayout::kNHD)).message(),
             Catch::Contains("token-major vs hnd"));
}
