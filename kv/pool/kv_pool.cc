#include "kv/pool/kv_pool.h"

namespace kvx::kv {

namespace {

std::vector<MemoryRange> rangesInOrder(const PoolLayout& layout, const SegmentOrder& order,
                                       std::span<const RegionId> regions) {
  const ModelShape& s = layout.shape();
  std::vector<MemoryRange> out(order.size());
  std::vector<TensorRange> pieces;
  for (std::uint64_t block = 0; block < layout.blocks(); ++block) {
    for (std::uint32_t layer = 0; layer < s.layers; ++layer) {
      for (std::uint32_t kv = 0; kv < s.kvCount(); ++kv) {
        pieces.clear();
        // A whole segment is one contiguous range in every layout.
        (void)layout.appendRanges(block, layer, kv, {}, pieces);
        const TensorRange& r = pieces.front();
        out[order.index(block, layer, kv)] = MemoryRange{regions[r.tensor], r.offset, r.length};
      }
    }
  }
  return out;
}

// Wrapped tensors whose sizes the caller gave must each hold a whole tensor of the layout.
Status checkTensorBytes(const KvPoolSpec& spec, const PoolLayout& layout) {
  if (spec.tensorBytes.empty()) return Status::ok();
  if (spec.tensorBytes.size() != spec.tensors.size()) {
    return invalidArgument("pool: " + std::to_string(spec.tensorBytes.size()) +
                           " tensor sizes for " + std::to_string(spec.tensors.size()) + " tensors");
  }
  for (std::size_t t = 0; t < spec.tensorBytes.size(); ++t) {
    if (spec.tensorBytes[t] < layout.tensorBytes()) {
      return invalidArgument("pool tensor " + std::to_string(t) + " is " +
                             std::to_string(spec.tensorBytes[t]) + " bytes; the pool needs " +
                             std::to_string(layout.tensorBytes()) + " per tensor (" +
                             std::to_string(spec.blocks) +
                             " blocks): pass tensors that large, "
                             "or fewer blocks");
    }
  }
  return Status::ok();
}

}  // namespace

KvPool::KvPool(Agent& agent, PoolLayout layout, KvPoolSpec spec)
    : agent_(agent),
      layout_(std::move(layout)),
      order_(layout_.layout(), layout_.blocks(), layout_.shape().layers, layout_.shape().kvCount()),
      spec_(std::move(spec)) {
  const ModelShape& s = layout_.shape();
  info_.model = s.name;
  info_.layout = std::string(toString(layout_.layout()));
  info_.blocks = layout_.blocks();
  info_.layers = s.layers;
  info_.kvCount = s.kvCount();
  info_.tokensPerBlock = s.tokensPerBlock;
  info_.segmentBytes = s.segmentBytes();
  info_.blockBytes = s.segmentBytes() * s.kvCount() * s.layers;
  info_.tensors = layout_.tensorCount();
  info_.tensorBytes = layout_.tensorBytes();
  info_.memory = spec_.kind;
  info_.device = spec_.kind == MemoryKind::kHost ? -1 : spec_.device;
}

std::string KvPool::regionName(std::uint32_t tensor) { return "kv.t" + std::to_string(tensor); }

Result<PoolLayout> KvPool::layoutOf(const KvPoolSpec& spec) {
  auto parsed = shapeFromNameOrJson(spec.model);
  if (!parsed.isOk()) return invalidArgument(parsed.status().message());
  ModelShape shape = std::move(parsed).value();
  KVX_ASSIGN_OR_RETURN(KvLayout kind, parseLayout(spec.layout));
  KVX_ASSIGN_OR_RETURN(PoolLayout layout, PoolLayout::create(shape, kind, spec.blocks));
  PoolDescription check{shape, kind, spec.blocks,
                        std::vector<RegionId>(layout.tensorCount(), RegionId{})};
  KVX_RETURN_IF_ERROR(validateDescription(check));
  return layout;
}

Result<std::unique_ptr<KvPool>> KvPool::create(Agent& agent, const KvPoolSpec& spec) {
  KVX_ASSIGN_OR_RETURN(PoolLayout layout, layoutOf(spec));
  if (!spec.tensors.empty() && spec.tensors.size() != layout.tensorCount()) {
    const PoolDescription check{layout.shape(), layout.layout(), spec.blocks,
                                std::vector<RegionId>(layout.tensorCount(), RegionId{})};
    return invalidArgument("pool " + describe(check) + " needs " +
                           std::to_string(layout.tensorCount()) + " tensors of " +
                           std::to_string(layout.tensorBytes()) + " bytes; got " +
                           std::to_string(spec.tensors.size()));
  }
  KVX_RETURN_IF_ERROR(checkTensorBytes(spec, layout));
  std::unique_ptr<KvPool> pool(new KvPool(agent, std::move(layout), spec));
  for (std::uint32_t t = 0; t < pool->layout_.tensorCount(); ++t) {
    const std::string name = regionName(t);
    if (spec.tensors.empty()) {
      KVX_ASSIGN_OR_RETURN(AllocatedRegion region,
                           agent.allocateMemory({name, pool->layout_.tensorBytes(), spec.kind,
                                                 spec.device, true, spec.populate}));
      pool->bases_.push_back(static_cast<std::byte*>(region.address));
      pool->regions_.push_back(region.id);
    } else {
      if (spec.tensors[t] == nullptr) {
        return invalidArgument("pool tensor " + std::to_string(t) + " has a null address");
      }
      KVX_ASSIGN_OR_RETURN(RegionId id,
                           agent.registerMemory({name, spec.tensors[t], pool->layout_.tensorBytes(),
                                                 spec.kind, spec.device, true}));
      pool->bases_.push_back(static_cast<std::byte*>(spec.tensors[t]));
      pool->regions_.push_back(id);
    }
  }
  return pool;
}

KvPool::~KvPool() {
  for (RegionId id : regions_) (void)agent_.deregisterMemory(id);
}

PoolDescription KvPool::description() const {
  return PoolDescription{layout_.shape(), layout_.layout(), layout_.blocks(), regions_};
}

Result<std::span<std::byte>> KvPool::segment(std::uint64_t block, std::uint32_t layer,
                                             std::uint32_t kv) const {
  if (spec_.kind != MemoryKind::kHost) {
    return failedPrecondition("segment views exist for host pools only; this pool is " +
                              std::string(toString(spec_.kind)) + " memory");
  }
  std::vector<TensorRange> pieces;
  KVX_RETURN_IF_ERROR(layout_.appendRanges(block, layer, kv, {}, pieces));
  const TensorRange& r = pieces.front();
  return std::span<std::byte>(bases_[r.tensor] + r.offset, r.length);
}

Result<MemoryRange> KvPool::segmentRange(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                                         std::size_t length) const {
  std::vector<TensorRange> pieces;
  KVX_RETURN_IF_ERROR(layout_.appendRanges(block, layer, kv, {}, pieces));
  const TensorRange& r = pieces.front();
  if (length != r.length) {
    return invalidArgument("segment (block " + std::to_string(block) + ", layer " +
                           std::to_string(layer) + ", " + (kv == 0 ? "K" : "V") + ") is " +
                           std::to_string(r.length) + " bytes; got a span of " +
                           std::to_string(length));
  }
  return MemoryRange{regions_[r.tensor], r.offset, r.length};
}

Status KvPool::writeSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                            std::span<const std::byte> bytes, Deadline deadline) const {
  KVX_ASSIGN_OR_RETURN(MemoryRange range, segmentRange(block, layer, kv, bytes.size()));
  return agent_.copyIntoRegion(range.region, range.offset, bytes, deadline);
}

Status KvPool::readSegment(std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
                           std::span<std::byte> out, Deadline deadline) const {
  KVX_ASSIGN_OR_RETURN(MemoryRange range, segmentRange(block, layer, kv, out.size()));
  return agent_.copyFromRegion(range.region, range.offset, out, deadline);
}

Status KvPool::writeSegments(std::span<const KvSegmentRef> refs, std::span<const std::byte> bytes,
                             Deadline deadline) const {
  // The host bytes are only read when copying into the pool.
  return copySegments(refs, const_cast<std::byte*>(bytes.data()), bytes.size(), true, deadline);
}

Status KvPool::readSegments(std::span<const KvSegmentRef> refs, std::span<std::byte> out,
                            Deadline deadline) const {
  return copySegments(refs, out.data(), out.size(), false, deadline);
}

Status KvPool::copySegments(std::span<const KvSegmentRef> refs, std::byte* host, std::size_t bytes,
                            bool into, Deadline deadline) const {
  const std::uint64_t segmentBytes = info_.segmentBytes;
  if (bytes != refs.size() * segmentBytes) {
    return invalidArgument(std::to_string(refs.size()) + " segments of " +
                           std::to_string(segmentBytes) + " bytes need a span of " +
                           std::to_string(refs.size() * segmentBytes) + " bytes; got " +
                           std::to_string(bytes));
  }
  std::vector<RegionCopy> pieces;
  pieces.reserve(refs.size());
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const KvSegmentRef& r = refs[i];
    auto range = segmentRange(r.block, r.layer, r.kv, segmentBytes);
    if (!range.isOk()) return range.status().withContext("segment " + std::to_string(i));
    pieces.push_back({range->region, range->offset, host + i * segmentBytes, segmentBytes});
  }
  return agent_.copyRegionPieces(pieces, into, deadline);
}

std::vector<MemoryRange> KvPool::allSegmentRanges() const {
  return rangesInOrder(layout_, order_, regions_);
}

std::vector<MemoryRange> KvPool::allSegmentRanges(const PoolDescription& remote) {
  PoolLayout layout = PoolLayout::create(remote.shape, remote.layout, remote.blocks).value();
  SegmentOrder order(remote.layout, remote.blocks, remote.shape.layers, remote.shape.kvCount());
  return rangesInOrder(layout, order, remote.tensorRegions);
}

}  // namespace kvx::kv
