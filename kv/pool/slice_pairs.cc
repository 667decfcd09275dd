#include "kv/pool/slice_pairs.h"

#include <algorithm>
#include <string>

namespace kvx::kv {

namespace {

// Zips two piece lists of equal total length into equally long pairs.
void zipPieces(std::span<const TensorRange> local, std::span<const TensorRange> remote,
               std::vector<RangePair>& out) {
  std::size_t i = 0, j = 0;
  std::uint64_t usedLocal = 0, usedRemote = 0;
  while (i < local.size() && j < remote.size()) {
    const std::uint64_t length =
        std::min(local[i].length - usedLocal, remote[j].length - usedRemote);
    out.push_back({{local[i].tensor, local[i].offset + usedLocal, length},
                   {remote[j].tensor, remote[j].offset + usedRemote, length}});
    usedLocal += length;
    usedRemote += length;
    if (usedLocal == local[i].length) ++i, usedLocal = 0;
    if (usedRemote == remote[j].length) ++j, usedRemote = 0;
  }
}

Status checkSlice(const PoolLayout& local, const PoolLayout& remote, HeadSlice slice) {
  const std::string mismatch =
      segmentMismatch(local.shape(), local.layout(), remote.shape(), remote.layout());
  if (!mismatch.empty()) return invalidArgument("cannot pair segments: " + mismatch);
  if (slice.whole() && local.shape().kvHeads != remote.shape().kvHeads) {
    return invalidArgument("whole segments of " + std::to_string(local.shape().kvHeads) +
                           " heads cannot pair with segments of " +
                           std::to_string(remote.shape().kvHeads) + "; give a head slice");
  }
  return Status::ok();
}

}  // namespace

Status appendSlicePairs(const PoolLayout& local, const PoolLayout& remote,
                        std::span<const std::uint64_t> localBlocks,
                        std::span<const std::uint64_t> remoteBlocks, std::uint32_t firstLayer,
                        std::uint32_t layerCount, HeadSlice slice, std::vector<RangePair>& out) {
  if (localBlocks.size() != remoteBlocks.size()) {
    return invalidArgument("block lists differ in length (" + std::to_string(localBlocks.size()) +
                           " vs " + std::to_string(remoteBlocks.size()) + ")");
  }
  KVX_RETURN_IF_ERROR(checkSlice(local, remote, slice));
  const ModelShape& shape = local.shape();
  if (layerCount == 0 || firstLayer + std::uint64_t{layerCount} > shape.layers) {
    return invalidArgument("layers [" + std::to_string(firstLayer) + ", +" +
                           std::to_string(layerCount) + ") are outside the pool's " +
                           std::to_string(shape.layers));
  }
  const HeadRange localHeads{slice.localFirst, slice.count};
  const HeadRange remoteHeads{slice.remoteFirst, slice.count};
  std::vector<TensorRange> localPieces, remotePieces;
  const auto pairSegment = [&](std::size_t i, std::uint32_t layer, std::uint32_t kv) -> Status {
    localPieces.clear();
    remotePieces.clear();
    KVX_RETURN_IF_ERROR(local.appendRanges(localBlocks[i], layer, kv, localHeads, localPieces));
    KVX_RETURN_IF_ERROR(remote.appendRanges(remoteBlocks[i], layer, kv, remoteHeads, remotePieces));
    zipPieces(localPieces, remotePieces, out);
    return Status::ok();
  };
  const bool layerMajor = local.layout() == KvLayout::kNHD || local.layout() == KvLayout::kHND;
  const std::uint32_t kvCount = shape.kvCount();
  if (layerMajor) {
    for (std::uint32_t layer = firstLayer; layer < firstLayer + layerCount; ++layer) {
      for (std::uint32_t kv = 0; kv < kvCount; ++kv) {
        for (std::size_t i = 0; i < localBlocks.size(); ++i) {
          KVX_RETURN_IF_ERROR(pairSegment(i, layer, kv));
        }
      }
    }
  } else if (local.layout() == KvLayout::kBlocksFirst) {
    for (std::uint32_t layer = firstLayer; layer < firstLayer + layerCount; ++layer) {
      for (std::size_t i = 0; i < localBlocks.size(); ++i) {
        for (std::uint32_t kv = 0; kv < kvCount; ++kv) {
          KVX_RETURN_IF_ERROR(pairSegment(i, layer, kv));
        }
      }
    }
  } else {
    for (std::size_t i = 0; i < localBlocks.size(); ++i) {
      for (std::uint32_t layer = firstLayer; layer < firstLayer + layerCount; ++layer) {
        for (std::uint32_t kv = 0; kv < kvCount; ++kv) {
          KVX_RETURN_IF_ERROR(pairSegment(i, layer, kv));
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace kvx::kv
