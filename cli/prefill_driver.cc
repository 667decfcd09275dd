#include "cli/prefill_driver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "cli/kv_content.h"

namespace kvx::cli {
namespace {

constexpr auto kSummaryEvery = std::chrono::seconds(5);

std::chrono::nanoseconds fromMs(double ms) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
}

KvMode modeOf(const std::string& mode, std::size_t index) {
  if (mode == "pull") return KvMode::kPull;
  if (mode == "mixed" && index % 2 == 1) return KvMode::kPull;
  return KvMode::kPush;
}

bool layerwiseOf(const std::string& layerwise, std::size_t index) {
  return layerwise == "on" || (layerwise == "mixed" && (index / 2) % 2 == 1);
}

}  // namespace

PrefillDriver::PrefillDriver(KvAgent& agent, ReplayOptions options,
                             std::vector<workload::TraceRecord> trace)
    : agent_(agent), options_(std::move(options)), trace_(std::move(trace)) {}

ReplayResult PrefillDriver::run(StopSignal& stop) {
  records_.assign(trace_.size(), RequestRecord{});
  start_ = Clock::now();
  lastEnd_ = start_;
  const std::size_t workers = std::min<std::size_t>(options_.maxOutstanding, trace_.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < workers; ++i) threads.emplace_back([this, &stop] { worker(stop); });

  bool shutDown = false;
  auto nextSummary = Clock::now() + kSummaryEvery;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      if (requestEnded_.wait_for(lock, std::chrono::milliseconds(100),
                                 [this] { return ended_ == trace_.size(); })) {
        break;
      }
    }
    if (stop.requested() && !shutDown) {
      // Fails the requests in flight (within 5 s) so that the workers' waits return.
      Status s = agent_.shutdown(deadlineIn(std::chrono::seconds(5)),
                                 "agent stopping on " + stop.reason());
      if (!s.isOk()) spdlog::warn("shutdown: {}", s.toString());
      shutDown = true;
    }
    if (Clock::now() >= nextSummary) {
      logSummary();
      nextSummary = Clock::now() + kSummaryEvery;
    }
  }
  for (auto& t : threads) t.join();
  logSummary();

  ReplayResult result;
  result.requests = std::move(records_);
  result.wall = lastEnd_ - start_;
  result.stopped = stop.requested();
  return result;
}

void PrefillDriver::worker(StopSignal& stop) {
  while (true) {
    std::size_t index;
    {
      std::lock_guard lock(mutex_);
      if (nextIndex_ == trace_.size()) return;
      index = nextIndex_++;
    }
    replay(index, stop);
    {
      std::lock_guard lock(mutex_);
      ++ended_;
      if (records_[index].submitted) --inFlight_;
      if (records_[index].released) {
        ++released_;
        bytes_ += records_[index].status.bytes;
      } else {
        ++failed_;
      }
      lastEnd_ = Clock::now();
    }
    requestEnded_.notify_all();
  }
}

void PrefillDriver::replay(std::size_t index, StopSignal& stop) {
  const workload::TraceRecord& trace = trace_[index];
  RequestRecord& record = records_[index];
  record.index = index;
  record.id = options_.idPrefix + "-" + std::to_string(index);
  record.tokens = trace.inputLength;
  record.prefixHashes = trace.hashIds.size();
  record.mode = modeOf(options_.mode, index);
  record.layerwise = layerwiseOf(options_.layerwise, index);
  record.arrival = fromMs(static_cast<double>(trace.timestampMs) / options_.timeScale);
  record.status.id = record.id;

  const auto due = start_ + record.arrival;
  const bool stopped = Clock::now() < due ? stop.waitFor(due - Clock::now()) : stop.requested();
  if (stopped) {
    record.error = "not submitted: the agent was stopped (" + stop.reason() + ")";
    return;
  }
  auto blocks = allocate(record, stop);
  if (!blocks.isOk()) {
    record.error = blocks.status().toString();
    return;
  }
  record.sourceBlocks = blocks->size();
  if (produce(record, *blocks, trace)) finish(record);
}

bool PrefillDriver::produce(RequestRecord& record, const std::vector<std::uint64_t>& blocks,
                            const workload::TraceRecord& trace) {
  KvRequestSpec spec;
  spec.id = record.id;
  spec.tokens = trace.inputLength;
  spec.sourceBlocks = blocks;
  spec.prefixHashes = trace.hashIds;
  spec.mode = record.mode;
  spec.layerwise = record.layerwise;

  const KvContent content(record.id, record.tokens, trace.hashIds,
                          geometryOf(agent_.pool(), options_.prefixChunkTokens));
  const SegmentAccessor segments = segmentsOf(agent_);
  const std::uint32_t layers = agent_.pool().layers;
  const auto layerTime = fromMs(options_.layerMs);
  Status failure;
  if (!record.layerwise) {
    // The whole prompt is computed first, one layer per step, then moved in one request.
    for (std::uint32_t layer = 0; layer < layers && failure.isOk(); ++layer) {
      failure = content.fillLayer(segments, blocks, layer);
      std::this_thread::sleep_for(layerTime);
    }
  }
  if (failure.isOk()) {
    record.submittedAt = Clock::now() - start_;
    failure = agent_.submit(spec);
  }
  if (!failure.isOk()) {
    record.error = failure.withContext("submit").toString();
    Status freed = agent_.freeBlocks(blocks);
    if (!freed.isOk()) spdlog::warn("freeing the blocks of {}: {}", record.id, freed.toString());
    return false;
  }
  record.submitted = true;
  {
    std::lock_guard lock(mutex_);
    ++submitted_;
    ++inFlight_;
  }
  spdlog::debug("{} submitted: {} tokens, {} blocks, {}{}", record.id, record.tokens, blocks.size(),
                toString(record.mode), record.layerwise ? ", layer-wise" : "");
  for (std::uint32_t layer = 0; record.layerwise && layer < layers; ++layer) {
    Status s = content.fillLayer(segments, blocks, layer);
    std::this_thread::sleep_for(layerTime);
    if (s.isOk()) s = agent_.layerReady(record.id, layer);
    if (!s.isOk()) {
      // The request has failed (its status will say why) or cannot go on: stop feeding it.
      record.error = s.withContext("layer " + std::to_string(layer)).toString();
      Status c = agent_.cancel(record.id);
      c.ignore();
      break;
    }
  }
  return true;
}

Result<std::vector<std::uint64_t>> PrefillDriver::allocate(RequestRecord& record,
                                                           StopSignal& stop) {
  const std::uint64_t count = agent_.pool().blocksFor(record.tokens);
  if (count > agent_.pool().blocks) {
    return resourceExhausted(record.id + " needs " + std::to_string(count) +
                             " blocks but the prefill pool has " +
                             std::to_string(agent_.pool().blocks) + "; raise --blocks");
  }
  const auto began = Clock::now();
  const auto giveUp = began + options_.requestTimeout;
  bool counted = false;
  while (true) {
    auto blocks = agent_.allocateBlocks(count);
    if (blocks.isOk() || blocks.status().code() != StatusCode::kResourceExhausted ||
        stop.requested() || Clock::now() >= giveUp) {
      std::lock_guard lock(mutex_);
      if (counted) --waitingForBlocks_;
      record.waitedForBlocks = Clock::now() - began;
      if (blocks.isOk() || blocks.status().code() != StatusCode::kResourceExhausted) {
        return blocks;
      }
      if (stop.requested()) {
        return cancelled("not submitted: the agent was stopped (" + stop.reason() +
                         ") while it waited for room in the prefill pool");
      }
      return blocks.status().withContext(
          "no room in the prefill pool for " + record.id + " within " +
          std::to_string(options_.requestTimeout.count()) +
          " ms (--timeout-ms); earlier requests hold the blocks: raise --blocks");
    }
    // The pool is full: wait for an earlier request to end and return its blocks.
    std::unique_lock lock(mutex_);
    if (!counted) {
      ++waitingForBlocks_;
      counted = true;
    }
    const std::uint64_t endedBefore = ended_;
    requestEnded_.wait_for(lock, std::chrono::milliseconds(50),
                           [&] { return ended_ != endedBefore; });
  }
}

void PrefillDriver::finish(RequestRecord& record) {
  const auto deadline = Clock::now() + options_.requestTimeout + std::chrono::seconds(5);
  auto done = agent_.wait(record.id, deadline);
  // The request's own failure says more than the layerReady call that noticed it.
  std::string failure;
  if (done.isOk()) {
    record.status = *done;
    record.released = done->state == KvRequestState::kReleased && done->status.isOk();
    if (!record.released) failure = done->status.toString();
  } else {
    if (done.status().code() == StatusCode::kTimedOut) {
      Status c = agent_.cancel(record.id);
      c.ignore();
    }
    if (auto known = agent_.status(record.id); known.isOk()) record.status = *known;
    failure = done.status().toString();
  }
  if (record.released) {
    record.error.clear();
  } else if (record.error.empty()) {
    record.error = failure;
  } else if (!failure.empty()) {
    record.error = failure + " (noticed at " + record.error + ")";
  }
  const KvRequestStatus& s = record.status;
  spdlog::debug(
      "{} {}: {} -> {} ({}), {:.3f} ms (queued {:.3f}), {} bytes, {} descriptors / {} "
      "ops, {} prefix blocks{}{}",
      record.id, record.released ? "released" : "FAILED", record.tokens, s.peer, s.placement,
      static_cast<double>(s.latency.count()) / 1e6, static_cast<double>(s.queued.count()) / 1e6,
      s.bytes, s.descriptors, s.operations, s.prefixBlocks, record.error.empty() ? "" : ": ",
      record.error);
}

void PrefillDriver::logSummary() {
  std::uint64_t ended, released, failed, inFlight, waiting, bytes;
  {
    std::lock_guard lock(mutex_);
    if (ended_ == endedAtLastSummary_ && inFlight_ == 0) return;
    endedAtLastSummary_ = ended_;
    ended = ended_;
    released = released_;
    failed = failed_;
    inFlight = inFlight_;
    waiting = waitingForBlocks_;
    bytes = bytes_;
  }
  const KvPoolUsage usage = agent_.usage();
  spdlog::info(
      "prefill: {}/{} requests ended ({} released, {} failed), {} in flight, {} waiting for "
      "blocks; {:.2f} GiB moved; pool {}/{} blocks free",
      ended, trace_.size(), released, failed, inFlight, waiting,
      static_cast<double>(bytes) / (1u << 30), usage.freeBlocks, usage.totalBlocks);
}

}  // namespace kvx::cli
