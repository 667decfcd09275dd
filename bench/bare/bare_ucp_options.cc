#include "bench/bare/bare_ucp_options.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace kvx::bench {
namespace {

constexpr std::uint64_t kDefaultBufferBytes = 256ull << 20;
// Far above anything useful, low enough that slot indices and products stay in 64 bits.
constexpr std::uint64_t kMaxBytes = 1ull << 40;
constexpr std::uint32_t kMaxSegments = 1u << 20;
constexpr std::uint32_t kMaxWindow = 1u << 16;

std::string value(std::uint64_t v) { return std::to_string(v); }

}  // namespace

std::string_view toString(BareOp op) { return op == BareOp::kPut ? "put" : "get"; }

std::string_view toString(SlotPattern pattern) {
  return pattern == SlotPattern::kContiguous ? "contiguous" : "random";
}

std::string_view toString(BufferAlloc alloc) {
  return alloc == BufferAlloc::kRegistered ? "registered" : "ucx";
}

Result<BareOp> parseBareOp(std::string_view text) {
  if (text == "put") return BareOp::kPut;
  if (text == "get") return BareOp::kGet;
  return invalidArgument("--op '" + std::string(text) + "': use put or get");
}

Result<SlotPattern> parseSlotPattern(std::string_view text) {
  if (text == "contiguous") return SlotPattern::kContiguous;
  if (text == "random") return SlotPattern::kRandom;
  return invalidArgument("--pattern '" + std::string(text) + "': use contiguous or random");
}

Result<BufferAlloc> parseBufferAlloc(std::string_view text) {
  if (text == "registered") return BufferAlloc::kRegistered;
  if (text == "ucx") return BufferAlloc::kUcx;
  return invalidArgument("--alloc '" + std::string(text) + "': use registered or ucx");
}

std::uint64_t BareUcpOptions::effectiveBufferBytes() const {
  if (segmentBytes == 0) return 0;
  std::uint64_t bytes = bufferBytes;
  if (bytes == 0) {
    const std::uint64_t inFlight = 2ull * window * segments * segmentBytes;
    bytes = std::max(kDefaultBufferBytes, std::min(inFlight, kMaxBytes));
  }
  return bytes / segmentBytes * segmentBytes;
}

Status validate(const BareUcpOptions& o) {
  if (o.transport != "shm" && o.transport != "tcp") {
    return invalidArgument("--transport '" + o.transport + "': use shm or tcp (kvx's names)");
  }
  if (o.segmentBytes == 0 || o.segmentBytes % 8 != 0 || o.segmentBytes > kMaxBytes) {
    return invalidArgument("--segment-bytes " + value(o.segmentBytes) +
                           ": must be a positive multiple of 8, at most " + value(kMaxBytes));
  }
  if (o.segments == 0 || o.segments > kMaxSegments) {
    return invalidArgument("--segments " + value(o.segments) + ": must be 1.." +
                           value(kMaxSegments));
  }
  if (o.window == 0 || o.window > kMaxWindow) {
    return invalidArgument("--window " + value(o.window) + ": must be 1.." + value(kMaxWindow));
  }
  if (o.bufferBytes > kMaxBytes) {
    return invalidArgument("--buffer-bytes " + value(o.bufferBytes) + ": at most " +
                           value(kMaxBytes));
  }
  if (o.slotCount() < o.segments) {
    return invalidArgument("--buffer-bytes " + value(o.effectiveBufferBytes()) + " holds " +
                           value(o.slotCount()) + " segment(s) of " + value(o.segmentBytes) +
                           " bytes, fewer than --segments " + value(o.segments));
  }
  if (!std::isfinite(o.seconds) || o.seconds < 0) {
    return invalidArgument("--seconds " + std::to_string(o.seconds) + ": must be >= 0");
  }
  if (o.seconds == 0 && o.requests == 0 && !o.memcpyOnly) {
    return invalidArgument("--requests 0 and no --seconds: nothing to measure");
  }
  if (!std::isfinite(o.timeoutSeconds) || o.timeoutSeconds <= 0) {
    return invalidArgument("--timeout-s " + std::to_string(o.timeoutSeconds) + ": must be > 0");
  }
  if (o.seconds >= o.timeoutSeconds) {
    return invalidArgument("--seconds " + std::to_string(o.seconds) +
                           " must be below --timeout-s " + std::to_string(o.timeoutSeconds));
  }
  if (!std::isfinite(o.targetSpinUs) || o.targetSpinUs < 0 || o.targetSpinUs > 1e9) {
    return invalidArgument("--target-spin-us " + std::to_string(o.targetSpinUs) +
                           ": must be 0..1e9");
  }
  for (const auto& [name, cpu] :
       {std::pair{"--initiator-cpu", o.initiatorCpu}, std::pair{"--target-cpu", o.targetCpu}}) {
    if (cpu < -1 || cpu >= CPU_SETSIZE) {
      return invalidArgument(std::string(name) + " " + std::to_string(cpu) + ": must be -1 (not " +
                             "pinned) or a CPU number below " + std::to_string(CPU_SETSIZE));
    }
  }
  if (!std::isfinite(o.memcpySeconds) || o.memcpySeconds <= 0) {
    return invalidArgument("--memcpy-seconds " + std::to_string(o.memcpySeconds) + ": must be > 0");
  }
  if (o.memory == MemoryKind::kCuda && o.alloc != BufferAlloc::kRegistered) {
    return invalidArgument(
        "--memory cuda needs --alloc registered (device memory comes from "
        "the GPU runtime, as kvx's CUDA pools do)");
  }
  if (o.memory == MemoryKind::kCuda && (o.memcpyReference || o.memcpyOnly)) {
    return invalidArgument(
        "--memory cuda: the memcpy reference measures host memory; "
        "leave out --memcpy and --memcpy-only");
  }
  if (o.device < 0) {
    return invalidArgument("--device " + std::to_string(o.device) + ": must be >= 0");
  }
  if (o.fixedOverhead && (o.op != BareOp::kPut || o.window != 1)) {
    return invalidArgument("--fixed-overhead measures one request (K puts + flush + AM) at a " +
                           std::string("time: it needs --op put --window 1 (got --op ") +
                           std::string(toString(o.op)) + " --window " + value(o.window) + ")");
  }
  return Status::ok();
}

}  // namespace kvx::bench
