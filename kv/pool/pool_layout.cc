#include "kv/pool/pool_layout.h"

#include <limits>

namespace kvx::kv {
namespace {

// a * b, or nothing on overflow.
bool multiply(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}

}  // namespace

std::string_view toString(KvLayout layout) {
  switch (layout) {
    case KvLayout::kNHD: return "nhd";
    case KvLayout::kHND: return "hnd";
    case KvLayout::kBlocksFirst: return "blocks-first";
    case KvLayout::kCrossLayer: return "cross-layer";
  }
  return "unknown";
}

Result<KvLayout> parseLayout(std::string_view text) {
  for (KvLayout layout :
       {KvLayout::kNHD, KvLayout::kHND, KvLayout::kBlocksFirst, KvLayout::kCrossLayer}) {
    if (toString(layout) == text) return layout;
  }
  return invalidArgument("unknown KV layout '" + std::string(text) +
                         "' (nhd, hnd, blocks-first, cross-layer)");
}

Result<PoolLayout> PoolLayout::create(ModelShape shape, KvLayout layout, std::uint64_t blocks) {
  KVX_RETURN_IF_ERROR(validateShape(shape));
  if (blocks == 0) return invalidArgument("a pool needs at least one block");
  std::uint64_t bytes = shape.segmentBytes() * shape.kvCount();
  const std::uint64_t perBlock = layout == KvLayout::kCrossLayer ? shape.layers : 1;
  if (!multiply(bytes, perBlock, bytes) || !multiply(bytes, blocks, bytes) ||
      !multiply(bytes, layout == KvLayout::kCrossLayer ? 1 : shape.layers, bytes)) {
    return invalidArgument("a pool of " + std::to_string(blocks) + " blocks of '" + shape.name +
                           "' does not fit in 64 bits");
  }
  const std::uint64_t tensorBytes = layout == KvLayout::kCrossLayer ? bytes : bytes / shape.layers;
  return PoolLayout(std::move(shape), layout, blocks, tensorBytes);
}

std::uint32_t PoolLayout::tensorCount() const {
  return layout_ == KvLayout::kCrossLayer ? 1 : shape_.layers;
}

Status PoolLayout::appendRanges(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                                HeadRange heads, std::vector<TensorRange>& out) const {
  const ModelShape& s = shape_;
  if (block >= blocks_ || layer >= s.layers || kv >= s.kvCount()) {
    return invalidArgument(
        "segment (block " + std::to_string(block) + ", layer " + std::to_string(layer) + ", " +
        (kv == 0 ? "K" : "V") + ") is outside the pool (" + std::to_string(blocks_) + " blocks, " +
        std::to_string(s.layers) + " layers, " + std::to_string(s.kvCount()) + " of K/V)");
  }
  const std::uint32_t count = heads.count == 0 ? s.kvHeads - heads.first : heads.count;
  if (heads.first >= s.kvHeads || count > s.kvHeads - heads.first) {
    return invalidArgument("head range [" + std::to_string(heads.first) + "+" +
                           std::to_string(heads.count) + ") is outside the " +
                           std::to_string(s.kvHeads) + " KV heads of '" + s.name + "'");
  }
  const std::uint64_t headBytes = std::uint64_t{s.headDim} * s.dtypeBytes;
  const std::uint64_t segment = s.segmentBytes();
  std::uint32_t tensor = layer;
  std::uint64_t base = 0;
  switch (layout_) {
    case KvLayout::kNHD:
    case KvLayout::kHND: base = (kv * blocks_ + block) * segment; break;
    case KvLayout::kBlocksFirst: base = (block * s.kvCount() + kv) * segment; break;
    case KvLayout::kCrossLayer:
      tensor = 0;
      base = ((block * s.layers + layer) * s.kvCount() + kv) * segment;
      break;
  }
  if (count == s.kvHeads) {
    out.push_back({tensor, base, segment});
  } else if (layout_ == KvLayout::kHND) {
    out.push_back({tensor, base + heads.first * s.tokensPerBlock * headBytes,
                   std::uint64_t{count} * s.tokensPerBlock * headBytes});
  } else {
    for (std::uint32_t t = 0; t < s.tokensPerBlock; ++t) {
      out.push_back({tensor, base + t * s.tokenBytes() + heads.first * headBytes,
                     std::uint64_t{count} * headBytes});
    }
  }
  return Status::ok();
}

std::string segmentMismatch(const ModelShape& a, KvLayout aLayout, const ModelShape& b,
                            KvLayout bLayout) {
  // Token-major layouts store a segment as [token][head][dim]; HND as [head][token][dim].
  const auto tokenMajor = [](KvLayout layout) { return layout != KvLayout::kHND; };
  if (a.layers != b.layers) return "layers differ";
  if (a.headDim != b.headDim) return "head sizes differ";
  if (a.dtypeBytes != b.dtypeBytes) return "dtype sizes differ";
  if (a.tokensPerBlock != b.tokensPerBlock) return "tokens per block differ";
  if (a.mla != b.mla) return "one pool is MLA and the other is not";
  if (tokenMajor(aLayout) != tokenMajor(bLayout)) {
    return "layouts order a segment's bytes differently (token-major vs hnd)";
  }
  return "";
}

}  // namespace kvx::kv
