#include "kv/pool/pool_description.h"

#include <limits>

namespace kvx::kv {

std::string describe(const PoolDescription& pool) {
  const ModelShape& s = pool.shape;
  return s.name + ": " + std::to_string(s.layers) + " layers x " + std::to_string(s.kvHeads) +
         (s.mla ? " latent" : " heads") + " x " + std::to_string(s.headDim) + " x " +
         std::to_string(s.dtypeBytes) + " B, " + std::to_string(s.tokensPerBlock) +
         " tokens/block, " + std::string(toString(pool.layout)) + ", " +
         std::to_string(pool.blocks) + " blocks";
}

Status checkSliceCompatible(const PoolDescription& local, const PoolDescription& remote) {
  const std::string what = segmentMismatch(local.shape, local.layout, remote.shape, remote.layout);
  if (what.empty()) return Status::ok();
  return failedPrecondition("incompatible KV pools: " + what + "; local pool " + describe(local) +
                            "; peer pool " + describe(remote));
}

Status checkCompatible(const PoolDescription& local, const PoolDescription& remote) {
  KVX_RETURN_IF_ERROR(checkSliceCompatible(local, remote));
  if (local.shape.kvHeads == remote.shape.kvHeads) return Status::ok();
  return failedPrecondition(
      "KV pools hold different heads per rank (" + std::to_string(local.shape.kvHeads) + " vs " +
      std::to_string(remote.shape.kvHeads) +
      "): only sliced requests (KvRequestSpec::slice) move between them; local pool " +
      describe(local) + "; peer pool " + describe(remote));
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

}  // namespace kvx::kv
