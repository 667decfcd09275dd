#include "daemon/decode_loop.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "daemon/kv_content.h"
#include "daemon/report_clocks.h"

namespace kvx::daemon {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);
constexpr auto kDecodeSummaryEvery = std::chrono::seconds(5);
constexpr auto kPeerPollEvery = std::chrono::seconds(1);

}  // namespace

DecodeLoop::DecodeLoop(KvAgent& agent, bool verify, std::uint32_t prefixChunkTokens, TpPlan tp,
                       bool keepArrivals)
    : agent_(agent),
      verify_(verify),
      prefixChunkTokens_(prefixChunkTokens),
      tp_(tp),
      keepArrivals_(keepArrivals),
      peers_(agent) {}

void DecodeLoop::run(const std::function<bool()>& done) {
  auto nextSummary = Clock::now() + kDecodeSummaryEvery;
  auto nextPeerPoll = Clock::now();
  while (!done()) {
    auto arrival = agent_.nextArrival(deadlineIn(kPoll));
    if (arrival.isOk()) {
      handle(*arrival);
    } else if (arrival.status().code() == StatusCode::kCancelled) {
      return;  // the agent shut down: nothing arrives any more
    } else if (arrival.status().code() != StatusCode::kTimedOut) {
      spdlog::warn("nextArrival failed: {}", arrival.status().toString());
      std::this_thread::sleep_for(kPoll);
    }
    const auto now = Clock::now();
    if (now >= nextPeerPoll) {
      peers_.poll();
      nextPeerPoll = now + kPeerPollEvery;
    }
    if (now >= nextSummary) {
      logSummary();
      nextSummary = now + kDecodeSummaryEvery;
    }
  }
}

void DecodeLoop::drain(Deadline deadline) {
  while (true) {
    auto arrival = agent_.nextArrival(deadline);
    if (!arrival.isOk()) return;
    handle(*arrival);
  }
}

void DecodeLoop::handle(const KvArrival& arrival) {
  ArrivalRecord record{arrival.id, monotonicNowNs(), arrival.blocks.size(), arrival.peers, 0, 0};
  ++stats_.arrivals;
  if (arrival.peers.size() > 1) ++stats_.gathered;
  stats_.blocks += arrival.blocks.size();
  stats_.prefixBlocks += arrival.prefixBlocks;
  const std::uint64_t moved = arrival.blocks.size() > arrival.prefixBlocks
                                  ? arrival.blocks.size() - arrival.prefixBlocks
                                  : 0;
  stats_.bytes += moved * agent_.pool().blockBytes;
  spdlog::debug("arrival {} from {}: {} tokens, {} blocks ({} from the prefix cache)", arrival.id,
                fmt::join(arrival.peers, "+"), arrival.tokens, arrival.blocks.size(),
                arrival.prefixBlocks);
  if (verify_) verify(arrival, record);
  if (Status s = agent_.consume(arrival.id); !s.isOk()) {
    ++stats_.errors;
    spdlog::error("consume {} failed: {}", arrival.id, s.toString());
  }
  if (Status s = agent_.release(arrival.id); !s.isOk()) {
    ++stats_.errors;
    spdlog::error("release {} failed: {}", arrival.id, s.toString());
  }
  if (keepArrivals_) {
    arrivals_.push_back(std::move(record));
    cpuAfterLastArrival_ = processCpuTime();
  }
}

void DecodeLoop::verify(const KvArrival& arrival, ArrivalRecord& record) {
  const ContentCpuScope accounted;
  const HeadSpan heads = tp_.heads();
  const KvContent content(
      arrival.id, arrival.tokens, arrival.prefixHashes,
      geometryOf(agent_.pool(), prefixChunkTokens_, heads.first, heads.count, tp_.totalHeads));
  const SegmentStore segments = segmentsOf(agent_);
  for (std::uint64_t index = 0; index < arrival.blocks.size(); ++index) {
    auto problem = content.checkBlock(segments, index, arrival.blocks[index]);
    if (!problem.isOk()) {
      ++stats_.errors;
      spdlog::error("cannot verify request {} block {} (pool block {}): {}", arrival.id, index,
                    arrival.blocks[index], problem.status().toString());
      return;
    }
    if (problem->empty()) {
      ++stats_.blocksVerified;
      ++record.verifiedBlocks;
      continue;
    }
    ++stats_.corruptBlocks;
    ++record.corruptBlocks;
    spdlog::error("CORRUPT: request {} from {} block {} (pool block {}{}): {}", arrival.id,
                  fmt::join(arrival.peers, "+"), index, arrival.blocks[index],
                  index < arrival.prefixBlocks ? ", from the prefix cache" : "", *problem);
  }
}

void DecodeLoop::logSummary() {
  const KvPoolUsage usage = agent_.usage();
  // Quiet while nothing happens, except that blocks held for a lost writer are said every
  // time (until they come back): they are the pool a stopped prefill agent keeps.
  if (stats_.arrivals == arrivalsAtLastSummary_ && usage.heldBlocks == 0 &&
      heldAtLastSummary_ == 0) {
    return;
  }
  spdlog::info(
      "decode: {} arrivals (+{} in 5 s), {} blocks ({} from the prefix cache), {} verified, {} "
      "corrupt, {:.2f} GiB moved in; pool {}/{} blocks free, {} cached, {} held for lost "
      "writers",
      stats_.arrivals, stats_.arrivals - arrivalsAtLastSummary_, stats_.blocks, stats_.prefixBlocks,
      stats_.blocksVerified, stats_.corruptBlocks, static_cast<double>(stats_.bytes) / (1u << 30),
      usage.freeBlocks, usage.totalBlocks, usage.cachedPrefixBlocks, usage.heldBlocks);
  arrivalsAtLastSummary_ = stats_.arrivals;
  heldAtLastSummary_ = usage.heldBlocks;
}

}  // namespace kvx::daemon
