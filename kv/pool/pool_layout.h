#pragma once

// PoolLayout: where the bytes of one (block, layer, K or V) segment, or of a head range of
// it, live in a KV-cache pool. The pool is a set of equally sized tensors: one per layer
// for the per-layer layouts, a single one for the cross-layer layout.
//
//   kNHD         per layer  [K|V][block][token][head][dim]   (vLLM flash-attn)
//   kHND         per layer  [K|V][block][head][token][dim]
//   kBlocksFirst per layer  [block][K|V][token][head][dim]   (FlashInfer)
//   kCrossLayer  one tensor [block][layer][K|V][token][head][dim]
// MLA shapes have no V: the [K|V] dimension has size 1.
//
// A head range of a token-major layout (NHD, blocks-first, cross-layer) is one strided
// piece per token; of HND it is one contiguous piece. Stateless after construction and
// thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/pool/model_shape.h"
#include "kvx/result.h"

namespace kvx::kv {

enum class KvLayout : std::uint8_t { kNHD, kHND, kBlocksFirst, kCrossLayer };

std::string_view toString(KvLayout layout);
// "nhd", "hnd", "blocks-first", "cross-layer".
Result<KvLayout> parseLayout(std::string_view text);

// Heads [first, first + count); count 0 means all heads.
struct HeadRange {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};

// A byte range inside tensor `tensor` of the pool.
struct TensorRange {
  std::uint32_t tensor = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

class PoolLayout {
 public:
  // INVALID_ARGUMENT for an invalid shape, zero blocks, or a pool whose size overflows.
  static Result<PoolLayout> create(ModelShape shape, KvLayout layout, std::uint64_t blocks);

  const ModelShape& shape() const { return shape_; }
  KvLayout layout() const { return layout_; }
  std::uint64_t blocks() const { return blocks_; }
  std::uint32_t tensorCount() const;
  std::uint64_t tensorBytes() const { return tensorBytes_; }
  std::uint64_t totalBytes() const { return tensorBytes_ * tensorCount(); }

  // Appends the ranges of segment (block, layer, kv) restricted to `heads`.
  // INVALID_ARGUMENT when an index or the head range is out of the shape.
  Status appendRanges(std::uint64_t block, std::uint32_t layer, std::uint32_t kv, HeadRange heads,
                      std::vector<TensorRange>& out) const;

 private:
  PoolLayout(ModelShape shape, KvLayout layout, std::uint64_t blocks, std::uint64_t tensorBytes)
      : shape_(std::move(shape)), layout_(layout), blocks_(blocks), tensorBytes_(tensorBytes) {}

  ModelShape shape_;
  KvLayout layout_;
  std::uint64_t blocks_;
  std::uint64_t tensorBytes_;
};

// Whether a head range of one pool's segments can be copied piece for piece into another's:
// equal layers, head size, dtype, tokens per block and MLA-ness, and layouts that order a
// segment's bytes the same way (token-major NHD, blocks-first and cross-layer agree with
// each other; HND only with HND). KV heads may differ. Empty when they line up, else why not.
std::string segmentMismatch(const ModelShape& a, KvLayout aLayout, const ModelShape& b,
                            KvLayout bLayout);

}  // namespace kvx::kv
