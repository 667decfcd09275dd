#pragma once

// PoolDescription: what one agent tells another about its KV pool at the KV handshake:
// the shape, the layout, the number of blocks and the (peer-local) ids of the registered
// regions holding its tensors. Plain data.

#include <cstdint>
#include <string>
#include <vector>

#include "kv/pool/pool_layout.h"
#include "kvx/ids.h"
#include "kvx/status.h"

namespace kvx::kv {

struct PoolDescription {
  ModelShape shape;
  KvLayout layout = KvLayout::kNHD;
  std::uint64_t blocks = 0;
  std::vector<RegionId> tensorRegions;  // one per tensor of the layout
};

// "llama3-8b: 32 layers x 8 heads x 128 x 2 B, 16 tokens/block, nhd, 1024 blocks".
std::string describe(const PoolDescription& pool);

// Whether blocks of `remote` can be copied segment for segment into `local` (or back):
// equal layers, heads, head size, dtype, tokens per block and MLA-ness, and layouts that
// order a segment's bytes the same way (token-major NHD, blocks-first and cross-layer
// agree with each other; HND only with HND). FAILED_PRECONDITION with both descriptions.
Status checkCompatible(const PoolDescription& local, const PoolDescription& remote);
// The same except for the number of KV heads per rank: what tensor-parallel slicing needs.
Status checkSliceCompatible(const PoolDescription& local, const PoolDescription& remote);

// Checks a description received from a peer: a valid shape, blocks > 0, one region per
// tensor and a segment count that prepared-list indices (32 bits) can address.
Status validateDescription(const PoolDescription& pool);

}  // namespace kvx::kv
