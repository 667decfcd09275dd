#include "bench/kv/sweep.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvx::bench {
namespace {

constexpr std::uint64_t kTokensPerBlock = 16;
constexpr std::uint64_t kDtypeBytes = 2;

std::string sizeLabel(std::uint64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

}  // namespace

Result<std::vector<BenchCase>> sweepCases(const SweepOptions& o) {
  if (o.requests > kMaxSweepRequests) {
    return invalidArgument("--sweep-requests " + std::to_string(o.requests) + " is above " +
                           std::to_string(kMaxSweepRequests));
  }
  std::vector<BenchCase> cases;
  for (std::uint64_t size : o.segmentBytes) {
    if (size == 0 || size % (kTokensPerBlock * kDtypeBytes) != 0) {
      return invalidArgument("--segment-bytes " + std::to_string(size) +
                             " must be a positive multiple of 32 (16 tokens x 2-byte elements)");
    }
    const std::string model = fmt::format(
        R"({{"name":"sweep-{}","layers":1,"kvHeads":1,"headDim":{},"dtypeBytes":2,"tokensPerBlock":16,"mla":true}})",
        sizeLabel(size), size / (kTokensPerBlock * kDtypeBytes));
    for (std::uint64_t k : o.segments) {
      for (std::uint64_t w : o.windows) {
        for (const std::string& mode : o.modes) {
          BenchCase c;
          c.scenario = "sweep";
          c.label = fmt::format("{} x{} w{} {} {}", sizeLabel(size), k, w, mode, o.order);
          c.model = model;
          c.tokens = k * kTokensPerBlock;
          c.window = w;
          c.mode = mode;
          c.blockOrder = o.order;
          const std::uint64_t requestBytes = size * k;
          c.requests = std::max<std::uint64_t>({2 * w, 4, o.bytesPerCase / requestBytes});
          c.requests = std::min<std::uint64_t>(c.requests, 2000);
          if (o.requests != 0) c.requests = o.requests;
          cases.push_back(std::move(c));
        }
      }
    }
  }
  return cases;
}

}  // namespace kvx::bench
