#pragma once

// TpPlan: where an agent's KV heads sit in the model when the model is split over
// tensor-parallel ranks, and which sliced requests (KvSlice) a prefill rank sends for one
// prompt. `kvx agent --tp-size/--tp-rank/--decode-tp` plans with it; a server that slices its
// own requests can too.
//
// The model's KV heads H are split evenly: rank r of a group of N holds the global heads
// [r * H / N, (r + 1) * H / N), numbered 0.. locally. A prefill rank sends, for each prompt,
// one request per decode rank whose heads overlap its own: the overlap, in each side's local
// numbering, into the decode-side request <prompt id> (a gather when several prefill ranks
// overlap one decode rank, a scatter when one prefill rank overlaps several decode ranks).
// Plain data and pure functions; safe from any thread.

#include <cstdint>
#include <string>
#include <vector>

#include "kvx/kv_types.h"
#include "kvx/result.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

// Heads [first, first + count) of the model.
struct HeadSpan {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  std::uint32_t end() const { return first + count; }
};

struct TpPlan {
  std::uint32_t totalHeads = 1;  // the model's KV heads, all ranks together
  std::uint32_t size = 1;        // this agent's TP group size (kvx agent --tp-size)
  std::uint32_t rank = 0;        // and its rank in it (--tp-rank)
  std::uint32_t decodeSize = 1;  // prefill: the decode group it sends to (--decode-tp)

  // This rank's global heads.
  HeadSpan heads() const { return headsOf(size, rank); }
  // Rank `r` of a group of `groupSize` (which divides totalHeads).
  HeadSpan headsOf(std::uint32_t groupSize, std::uint32_t r) const;
  // Whether requests are sliced: any TP group larger than one rank. Otherwise requests move
  // whole blocks to the destination the scheduler chooses.
  bool sliced() const { return size > 1 || decodeSize > 1; }
};

// INVALID_ARGUMENT, naming the option, unless every group size divides totalHeads and the
// rank is within its group. `mla`: the shape has one latent head that every rank holds, so
// it cannot be split (sizes must be 1).
Result<TpPlan> makeTpPlan(std::uint32_t totalHeads, bool mla, std::uint32_t size,
                          std::uint32_t rank, std::uint32_t decodeSize);

// One sliced request of a prompt: to decode rank `decodeRank`, with `slice` (sourceFirstHead
// and destinationFirstHead local to each side; destinationId the prompt's id; sources the
// prefill ranks that overlap that decode rank).
struct SlicePart {
  std::uint32_t decodeRank = 0;
  KvSlice slice;
};

// The parts this prefill rank sends for the prompt `promptId`, by decode rank.
std::vector<SlicePart> slicePlan(const TpPlan& plan, const std::string& promptId);

// The prefill-side id of a part: "<promptId>@d<decodeRank>".
std::string partId(const std::string& promptId, std::uint32_t decodeRank);

}  // namespace kvx
#pragma GCC visibility pop
