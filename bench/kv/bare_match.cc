#include "bench/kv/bare_match.h"

#include <algorithm>
#include <cmath>

namespace kvx::bench {

BareUcpOptions matchingBare(const BenchCase& c, const CaseMetrics& kvx,
                            std::uint64_t segmentBytes) {
  BareUcpOptions o;
  o.transport = bareTransportFor(c.transport);
  o.alloc = BufferAlloc::kUcx;
  if (bareOnGpu(c.memory, c.gpuPath, c.transport)) {
    o.alloc = BufferAlloc::kRegistered;
    o.memory = MemoryKind::kCuda;
    o.device = c.device;
  }
  o.op = c.mode == "pull" ? BareOp::kGet : BareOp::kPut;
  const double ops = std::max(1.0, std::round(kvx.operationsPerRequest));
  const double bytesPerRequest =
      kvx.released > 0 ? static_cast<double>(kvx.bytes) / static_cast<double>(kvx.released) : 0;
  std::uint64_t opBytes = bytesPerRequest > 0
                              ? static_cast<std::uint64_t>(bytesPerRequest / ops) / 8 * 8
                              : segmentBytes;
  o.segmentBytes = std::max<std::uint64_t>(8, opBytes);
  o.segments = static_cast<std::uint32_t>(ops);
  o.window = static_cast<std::uint32_t>(c.window * c.prefills);
  o.requests = std::max<std::uint64_t>(kvx.released, 2 * o.window);
  o.warmupRequests = std::min<std::uint32_t>(4, o.window);
  o.pattern = c.blockOrder == "random" ? SlotPattern::kRandom : SlotPattern::kContiguous;
  // The data in flight may exceed what two processes can map on this machine: slots are
  // reused across requests, which does not change the bytes each operation moves.
  const std::uint64_t inFlight = std::uint64_t{o.window} * o.segments * o.segmentBytes;
  // At least 256 MiB, so that the slots are not cache-resident where kvx's pools are not.
  o.bufferBytes =
      std::clamp<std::uint64_t>(2 * inFlight, c.smoke ? 0 : 256ull << 20, 2048ull << 20);
  o.bufferBytes = std::max(o.bufferBytes, o.segmentBytes * o.segments);
  o.notify = true;
  o.fixedOverhead = c.fixedOverhead;
  o.targetSpinUs = kKvxProgressSpinUs;
  o.timeoutSeconds = 600;
  return o;
}

}  // namespace kvx::bench
