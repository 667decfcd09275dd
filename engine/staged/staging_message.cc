#include "engine/staged/staging_message.h"

namespace kvx::engine {
namespace {

constexpr std::uint8_t kVersion = 2;
constexpr std::size_t kRequestFixedBytes = 24;
constexpr std::size_t kRangeBytes = 24;
constexpr std::size_t kReplyFixedBytes = 24;
constexpr std::size_t kMaxReplyMessage = 4096;

void put(std::vector<std::uint8_t>& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

std::uint64_t get(std::span<const std::uint8_t> in, std::size_t at, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= std::uint64_t{in[at + i]} << (8 * i);
  return value;
}

Status checkVersion(std::span<const std::uint8_t> payload, const char* what) {
  if (payload.empty() || payload[0] != kVersion) {
    return protocolError(std::string("staging ") + what + " of version " +
                         (payload.empty() ? std::string("(none)") : std::to_string(payload[0])) +
                         "; this agent speaks version " + std::to_string(kVersion));
  }
  return Status::ok();
}

}  // namespace

std::string_view toString(StagingOp op) {
  switch (op) {
    case StagingOp::kWrite: return "write";
    case StagingOp::kCopyIn: return "copy-in";
    case StagingOp::kRead: return "read";
    case StagingOp::kRelease: return "release";
  }
  return "unknown";
}

std::uint64_t StagingRequest::bytes() const {
  std::uint64_t total = 0;
  for (const StagingRange& range : ranges) total += range.length;
  return total;
}

std::vector<std::uint8_t> encodeStagingRequest(const StagingRequest& request) {
  std::vector<std::uint8_t> out;
  out.reserve(kRequestFixedBytes + kRangeBytes * request.ranges.size());
  put(out, kVersion, 1);
  put(out, static_cast<std::uint8_t>(request.op), 1);
  put(out, 0, 2);
  put(out, request.slot, 4);
  put(out, request.requestId, 8);
  put(out, request.ranges.size(), 4);
  put(out, 0, 4);
  for (const StagingRange& range : request.ranges) {
    put(out, range.region, 8);
    put(out, range.offset, 8);
    put(out, range.length, 8);
  }
  return out;
}

Result<StagingRequest> decodeStagingRequest(std::span<const std::uint8_t> payload) {
  KVX_RETURN_IF_ERROR(checkVersion(payload, "request"));
  if (payload.size() < kRequestFixedBytes) {
    return protocolError("staging request of " + std::to_string(payload.size()) +
                         " bytes is shorter than " + std::to_string(kRequestFixedBytes));
  }
  if (payload[2] != 0 || payload[3] != 0 || get(payload, 20, 4) != 0) {
    return protocolError("staging request with non-zero reserved bytes");
  }
  const std::uint8_t op = payload[1];
  if (op < static_cast<std::uint8_t>(StagingOp::kWrite) ||
      op > static_cast<std::uint8_t>(StagingOp::kRelease)) {
    return protocolError("staging request with unknown operation " + std::to_string(op));
  }
  StagingRequest request;
  request.op = static_cast<StagingOp>(op);
  request.slot = static_cast<std::uint32_t>(get(payload, 4, 4));
  request.requestId = get(payload, 8, 8);
  const std::uint64_t count = get(payload, 16, 4);
  const bool carriesRanges = request.op == StagingOp::kWrite || request.op == StagingOp::kRead;
  if (carriesRanges && (count == 0 || count > kMaxStagingRanges)) {
    return protocolError("staging " + std::string(toString(request.op)) + " request with " +
                         std::to_string(count) + " ranges; it needs 1 to " +
                         std::to_string(kMaxStagingRanges));
  }
  if (!carriesRanges && count != 0) {
    return protocolError("staging " + std::string(toString(request.op)) +
                         " request carries ranges, which only write and read requests may");
  }
  if (payload.size() != kRequestFixedBytes + count * kRangeBytes) {
    return protocolError("staging request says it has " + std::to_string(count) +
                         " ranges but is " + std::to_string(payload.size()) + " bytes long");
  }
  request.ranges.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::size_t at = kRequestFixedBytes + i * kRangeBytes;
    StagingRange range{get(payload, at, 8), get(payload, at + 8, 8), get(payload, at + 16, 8)};
    if (range.length == 0) {
      return protocolError("staging request with an empty range (range " + std::to_string(i) + ")");
    }
    request.ranges.push_back(range);
  }
  return request;
}

std::vector<std::uint8_t> encodeStagingReply(const StagingReply& reply) {
  const std::string& message = reply.status.message();
  const std::size_t n = std::min(message.size(), kMaxReplyMessage);
  std::vector<std::uint8_t> out;
  out.reserve(kReplyFixedBytes + n);
  put(out, kVersion, 1);
  put(out, static_cast<std::uint8_t>(reply.kind), 1);
  put(out, 0, 2);
  put(out, reply.slot, 4);
  put(out, reply.requestId, 8);
  put(out, static_cast<std::uint32_t>(reply.status.code()), 4);
  put(out, n, 4);
  out.insert(out.end(), message.begin(), message.begin() + static_cast<std::ptrdiff_t>(n));
  return out;
}

Result<StagingReply> decodeStagingReply(std::span<const std::uint8_t> payload) {
  KVX_RETURN_IF_ERROR(checkVersion(payload, "reply"));
  if (payload.size() < kReplyFixedBytes) {
    return protocolError("staging reply of " + std::to_string(payload.size()) +
                         " bytes is shorter than " + std::to_string(kReplyFixedBytes));
  }
  const std::uint8_t kind = payload[1];
  if (kind < static_cast<std::uint8_t>(StagingReplyKind::kGranted) ||
      kind > static_cast<std::uint8_t>(StagingReplyKind::kFailed)) {
    return protocolError("staging reply of unknown kind " + std::to_string(kind));
  }
  if (payload[2] != 0 || payload[3] != 0) {
    return protocolError("staging reply with non-zero reserved bytes");
  }
  const std::uint64_t n = get(payload, 20, 4);
  if (n > kMaxReplyMessage || payload.size() != kReplyFixedBytes + n) {
    return protocolError("staging reply says its message has " + std::to_string(n) + " bytes but " +
                         std::to_string(payload.size() - kReplyFixedBytes) + " follow");
  }
  StagingReply reply;
  reply.kind = static_cast<StagingReplyKind>(kind);
  reply.slot = static_cast<std::uint32_t>(get(payload, 4, 4));
  reply.requestId = get(payload, 8, 8);
  if (reply.kind != StagingReplyKind::kFailed && (get(payload, 16, 4) != 0 || n != 0)) {
    return protocolError("staging reply of kind " + std::to_string(kind) +
                         " carries a status, which only a failure may");
  }
  if (reply.kind == StagingReplyKind::kFailed) {
    const auto code = static_cast<std::uint32_t>(get(payload, 16, 4));
    const auto* text = reinterpret_cast<const char*>(payload.data() + kReplyFixedBytes);
    std::string message(text, n);
    // A peer's code this side does not know, or OK on a failure, reads as INTERNAL.
    const bool known = code > 0 && code <= static_cast<std::uint32_t>(StatusCode::kInternal);
    reply.status =
        Status(known ? static_cast<StatusCode>(code) : StatusCode::kInternal, "peer: " + message);
  }
  return reply;
}

}  // namespace kvx::engine
