#include "kv/pool/segment_order.h"

namespace kvx::kv {

std::uint32_t SegmentOrder::index(std::uint64_t block, std::uint32_t layer,
                                  std::uint32_t kv) const {
  switch (layout_) {
    case KvLayout::kNHD:
    case KvLayout::kHND:
      return static_cast<std::uint32_t>((std::uint64_t{layer} * kvCount_ + kv) * blocks_ + block);
    case KvLayout::kBlocksFirst:
      return static_cast<std::uint32_t>((std::uint64_t{layer} * blocks_ + block) * kvCount_ + kv);
    case KvLayout::kCrossLayer:
      return static_cast<std::uint32_t>((block * layers_ + layer) * kvCount_ + kv);
  }
  return 0;
}

void SegmentOrder::appendPairs(const SegmentOrder& remote,
                               std::span<const std::uint64_t> localBlocks,
                               std::span<const std::uint64_t> remoteBlocks,
                               std::uint32_t firstLayer, std::uint32_t layerCount,
                               std::vector<std::uint32_t>& localOut,
                               std::vector<std::uint32_t>& remoteOut) const {
  const std::uint32_t end = firstLayer + layerCount;
  auto add = [&](std::size_t i, std::uint32_t layer, std::uint32_t kv) {
    localOut.push_back(index(localBlocks[i], layer, kv));
    remoteOut.push_back(remote.index(remoteBlocks[i], layer, kv));
  };
  const std::size_t n = localBlocks.size();
  localOut.reserve(localOut.size() + n * layerCount * kvCount_);
  remoteOut.reserve(remoteOut.size() + n * layerCount * kvCount_);
  switch (layout_) {
    case KvLayout::kNHD:
    case KvLayout::kHND:
      for (std::uint32_t layer = firstLayer; layer < end; ++layer) {
        for (std::uint32_t kv = 0; kv < kvCount_; ++kv) {
          for (std::size_t i = 0; i < n; ++i) add(i, layer, kv);
        }
      }
      break;
    case KvLayout::kBlocksFirst:
      for (std::uint32_t layer = firstLayer; layer < end; ++layer) {
        for (std::size_t i = 0; i < n; ++i) {
          for (std::uint32_t kv = 0; kv < kvCount_; ++kv) add(i, layer, kv);
        }
      }
      break;
    case KvLayout::kCrossLayer:
      for (std::size_t i = 0; i < n; ++i) {
        for (std::uint32_t layer = firstLayer; layer < end; ++layer) {
          for (std::uint32_t kv = 0; kv < kvCount_; ++kv) add(i, layer, kv);
        }
      }
      break;
  }
}

}  // namespace kvx::kv
