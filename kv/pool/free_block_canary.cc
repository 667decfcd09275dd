#include "kv/pool/free_block_canary.h"

#include <cstring>

namespace kvx::kv {
namespace {

// The word filling every 8 bytes of a free block: the block index times an odd constant (a
// one-to-one map, so no two blocks share it), mixed with a fixed word.
std::uint64_t patternOf(std::uint64_t block) {
  return 0x6b76785f66726565ull ^ (block * 0x9e3779b97f4a7c15ull);
}

void fillSpan(std::span<std::byte> bytes, std::uint64_t word) {
  std::size_t at = 0;
  for (; at + sizeof word <= bytes.size(); at += sizeof word) {
    std::memcpy(bytes.data() + at, &word, sizeof word);
  }
  std::memcpy(bytes.data() + at, &word, bytes.size() - at);
}

bool spanHolds(std::span<const std::byte> bytes, std::uint64_t word) {
  std::size_t at = 0;
  for (; at + sizeof word <= bytes.size(); at += sizeof word) {
    if (std::memcmp(bytes.data() + at, &word, sizeof word) != 0) return false;
  }
  return std::memcmp(bytes.data() + at, &word, bytes.size() - at) == 0;
}

}  // namespace

Result<std::unique_ptr<FreeBlockCanary>> FreeBlockCanary::create(const KvPool& pool) {
  if (pool.info().blocks > 0) {
    auto probe = pool.segment(0, 0, 0);
    if (!probe.isOk()) {
      return failedPrecondition("checking free blocks needs a host pool: " +
                                probe.status().message());
    }
  }
  std::unique_ptr<FreeBlockCanary> canary(new FreeBlockCanary(pool));
  const BlockExtent all{0, pool.info().blocks};
  canary->fill(std::span(&all, 1));
  return canary;
}

FreeBlockCanary::FreeBlockCanary(const KvPool& pool) : pool_(pool) {}

std::vector<std::span<std::byte>> FreeBlockCanary::segmentsOf(std::uint64_t block) const {
  std::vector<std::span<std::byte>> spans;
  const KvPoolInfo& info = pool_.info();
  for (std::uint32_t layer = 0; layer < info.layers; ++layer) {
    for (std::uint32_t kv = 0; kv < info.kvCount; ++kv) {
      auto segment = pool_.segment(block, layer, kv);
      if (segment.isOk()) spans.push_back(*segment);
    }
  }
  return spans;
}

void FreeBlockCanary::fill(std::span<const BlockExtent> extents) {
  for (const std::uint64_t block : expandExtents(extents)) {
    for (std::span<std::byte> segment : segmentsOf(block)) fillSpan(segment, patternOf(block));
  }
}

std::vector<std::uint64_t> FreeBlockCanary::check(std::span<const BlockExtent> extents) {
  std::vector<std::uint64_t> changed;
  for (const std::uint64_t block : expandExtents(extents)) {
    for (std::span<std::byte> segment : segmentsOf(block)) {
      if (!spanHolds(segment, patternOf(block))) {
        changed.push_back(block);
        break;
      }
    }
  }
  lateWrites_ += changed.size();
  return changed;
}

}  // namespace kvx::kv
