#include "agent/kv/pool_description.h"

#include <limits>

namespace kvx::agent::kv {

namespace {

// Token-major layouts store a segment as [token][head][dim]; HND as [head][token][dim].
bool tokenMajor(KvLayout layout) { return layout != KvLayout::kHND; }

}  // namespace

std::string describe(const PoolDescription& pool) {
  const ModelShape& s = pool.shape;
  return s.name + ": " + std::to_string(s.layers) + " layers x " + std::to_string(s.kvHeads) +
         (s.mla ? " latent" : " heads") + " x " + std::to_string(s.headDim) + " x " +
         std::to_string(s.dtypeBytes) + " B, " + std::to_string(s.tokensPerBlock) +
         " tokens/block, " + std::string(toString(pool.layout)) + ", " +
         std::to_string(pool.blocks) + " blocks";
}

Status checkCompatible(const PoolDescription& local, const PoolDescription& remote) {
  const ModelShape& a = local.shape;
  const ModelShape& b = remote.shape;
  std::string what;
  if (a.layers != b.layers)
    what = "layers differ";
  else if (a.kvHeads != b.kvHeads)
    what = "KV heads per rank differ";
  else if (a.headDim != b.headDim)
    what = "head sizes differ";
  else if (a.dtypeBytes != b.dtypeBytes)
    what = "dtype sizes differ";
  else if (a.tokensPerBlock != b.tokensPerBlock)
    what = "tokens per block differ";
  else if (a.mla != b.mla)
    what = "one pool is MLA and the other is not";
  else if (tokenMajor(local.layout) != tokenMajor(remote.layout)) {
    what = "layouts order a segment's bytes differently (token-major vs hnd)";
  }
  if (what.empty()) return Status::ok();
  return failedPrecondition("incompatible KV pools: " + what + "; local pool " + describe(local) +
                            "; peer pool " + describe(remote));
}

Status validateDescription(const PoolDescription& pool) {
  KVX_RETURN_IF_ERROR(validateShape(pool.shape));
  auto layout = PoolLayout::create(pool.shape, pool.layout, pool.blocks);
  if (!layout.isOk()) return layout.status();
  if (pool.tensorRegions.size() != layout->tensorCount()) {
    return invalidArgument("pool description lists " + std::to_string(pool.tensorRegions.size()) +
                           " tensor regions; layout " + std::string(toString(pool.layout)) +
                           " has " + std::to_string(layout->tensorCount()));
  }
  const std::uint64_t segments = pool.blocks * pool.shape.layers * pool.shape.kvCount();
  if (segments > std::numeric_limits<std::uint32_t>::max()) {
    return invalidArgument("pool has " + std::to_string(segments) +
                           " segments; at most 2^32-1 are addressable");
  }
  return Status::ok();
}

}  // namespace kvx::agent::kv
