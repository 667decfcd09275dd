#include "kvx/tp_plan.h"

#include <algorithm>

namespace kvx {
namespace {

std::string num(std::uint32_t value) { return std::to_string(value); }

Status checkGroup(std::uint32_t totalHeads, std::uint32_t size, const char* option) {
  if (size == 0) return invalidArgument(std::string(option) + " must be at least 1");
  if (totalHeads % size != 0) {
    return invalidArgument(std::string(option) + " " + num(size) + " does not divide the model's " +
                           num(totalHeads) +
                           " KV heads; each rank must hold the same number of whole heads");
  }
  return Status::ok();
}

}  // namespace

HeadSpan TpPlan::headsOf(std::uint32_t groupSize, std::uint32_t r) const {
  const std::uint32_t count = totalHeads / groupSize;
  return HeadSpan{r * count, count};
}

Result<TpPlan> makeTpPlan(std::uint32_t totalHeads, bool mla, std::uint32_t size,
                          std::uint32_t rank, std::uint32_t decodeSize) {
  if (totalHeads == 0) return invalidArgument("the model shape has no KV heads");
  if (mla && (size > 1 || decodeSize > 1)) {
    return invalidArgument(
        "an MLA shape has one latent KV head that every tensor-parallel rank holds whole; "
        "there are no heads to split: use --tp-size 1 and --decode-tp 1");
  }
  KVX_RETURN_IF_ERROR(checkGroup(totalHeads, size, "--tp-size"));
  KVX_RETURN_IF_ERROR(checkGroup(totalHeads, decodeSize, "--decode-tp"));
  if (rank >= size) {
    return invalidArgument("--tp-rank " + num(rank) + " is not a rank of a group of --tp-size " +
                           num(size) + " (ranks 0 to " + num(size - 1) + ")");
  }
  return TpPlan{totalHeads, size, rank, decodeSize};
}

std::vector<SlicePart> slicePlan(const TpPlan& plan, const std::string& promptId) {
  const HeadSpan own = plan.heads();
  std::vector<SlicePart> parts;
  for (std::uint32_t q = 0; q < plan.decodeSize; ++q) {
    const HeadSpan theirs = plan.headsOf(plan.decodeSize, q);
    const std::uint32_t first = std::max(own.first, theirs.first);
    const std::uint32_t end = std::min(own.end(), theirs.end());
    if (first >= end) continue;
    // Prefill ranks that overlap decode rank q: one when prefill ranks are at least as wide.
    std::uint32_t sources = 0;
    for (std::uint32_t r = 0; r < plan.size; ++r) {
      const HeadSpan other = plan.headsOf(plan.size, r);
      if (other.first < theirs.end() && theirs.first < other.end()) ++sources;
    }
    KvSlice slice;
    slice.sourceFirstHead = first - own.first;
    slice.destinationFirstHead = first - theirs.first;
    slice.heads = end - first;
    slice.destinationId = promptId;
    slice.sources = sources;
    parts.push_back(SlicePart{q, std::move(slice)});
  }
  return parts;
}

std::string partId(const std::string& promptId, std::uint32_t decodeRank) {
  return promptId + "@d" + num(decodeRank);
}

}  // namespace kvx
