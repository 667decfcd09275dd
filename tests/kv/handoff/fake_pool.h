#pragma once

// FakePool: one agent's KV pool in a FakeNetwork: the BlockAllocator its state machine
// allocates from, and host bytes for every (block, layer, K or V) segment, stored
// block-major as in the cross-layer layout. tinyShape() keeps pools small and bytes few.
//
// Threads: one; the test's.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kv/pool/block_allocator.h"
#include "kv/pool/pool_description.h"

namespace kvx::test::handoff {

// 4 layers, K and V, 4 tokens per block, 4 bytes per token: 16-byte segments, 128-byte blocks.
inline kv::ModelShape tinyShape() {
  kv::ModelShape shape;
  shape.name = "tiny";
  shape.layers = 4;
  shape.kvHeads = 1;
  shape.headDim = 4;
  shape.dtypeBytes = 1;
  shape.tokensPerBlock = 4;
  return shape;
}

class FakePool {
 public:
  explicit FakePool(std::uint64_t blocks, kv::ModelShape shape = tinyShape()) : allocator_(blocks) {
    description_.shape = std::move(shape);
    description_.layout = kv::KvLayout::kCrossLayer;
    description_.blocks = blocks;
    bytes_.assign(blocks * blockBytes(), 0);
  }

  const kv::PoolDescription& description() const { return description_; }
  kv::BlockAllocator& allocator() { return allocator_; }
  const kv::BlockAllocator& allocator() const { return allocator_; }
  std::uint64_t blocks() const { return description_.blocks; }
  std::uint32_t layers() const { return description_.shape.layers; }
  std::uint32_t kvCount() const { return description_.shape.kvCount(); }
  std::uint64_t segmentBytes() const { return description_.shape.segmentBytes(); }
  std::uint64_t blockBytes() const { return segmentBytes() * kvCount() * layers(); }

  std::span<std::uint8_t> segment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv) {
    const std::uint64_t index = (block * layers() + layer) * kvCount() + kv;
    return std::span<std::uint8_t>(bytes_).subspan(index * segmentBytes(), segmentBytes());
  }

 private:
  kv::PoolDescription description_;
  kv::BlockAllocator allocator_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace kvx::test::handoff
