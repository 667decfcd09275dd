// PrefillDriver: the replay's schedule (workers, arrival times, room in the prefill pool,
// progress summaries). What happens to one prompt's requests is in prefill_requests.cc.
#include "daemon/prefill_driver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "daemon/report_clocks.h"

namespace kvx::daemon {
namespace {

constexpr auto kPrefillSummaryEvery = std::chrono::seconds(5);

// Once the agent is stopping: whether the stop cut `record` short (never submitted, or
// cancelled in flight by the shutdown) rather than it failing on its own.
bool cutShortByStop(const RequestRecord& record) {
  return !record.released &&
         (!record.submitted || record.status.status.code() == StatusCode::kCancelled);
}

KvMode modeOf(const std::string& mode, std::size_t index) {
  if (mode == "pull") return KvMode::kPull;
  if (mode == "mixed" && index % 2 == 1) return KvMode::kPull;
  return KvMode::kPush;
}

bool layerwiseOf(const std::string& layerwise, std::size_t index) {
  return layerwise == "on" || (layerwise == "mixed" && (index / 2) % 2 == 1);
}

std::size_t partsOf(const ReplayOptions& options) {
  return options.tp.sliced() ? slicePlan(options.tp, "").size() : 1;
}

}  // namespace

PrefillDriver::PrefillDriver(KvAgent& agent, ReplayOptions options,
                             std::vector<workload::TraceRecord> trace)
    : agent_(agent),
      options_(std::move(options)),
      trace_(std::move(trace)),
      partsPerPrompt_(partsOf(options_)) {}

ReplayResult PrefillDriver::run(StopSignal& stop) {
  ReplayResult result;
  result.cpuStart = processCpuTime();
  const std::int64_t readyBefore = peersReadyCpuUs(agent_.usage());
  records_.assign(trace_.size() * partsPerPrompt_, RequestRecord{});
  start_ = Clock::now();
  {
    sync::MutexLock lock(mutex_);  // no worker runs yet; lastEnd_ is only touched under it
    lastEnd_ = start_;
  }
  const std::size_t workers = std::min<std::size_t>(options_.maxOutstanding, trace_.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < workers; ++i) threads.emplace_back([this, &stop] { worker(stop); });

  bool shutDown = false;
  auto nextSummary = Clock::now() + kPrefillSummaryEvery;
  while (true) {
    {
      sync::UniqueLock lock(mutex_);
      const auto allEnded = [this]() KVX_REQUIRES(mutex_) { return ended_ == trace_.size(); };
      if (promptEnded_.wait_for(lock.native(), std::chrono::milliseconds(100), allEnded)) break;
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
      nextSummary = Clock::now() + kPrefillSummaryEvery;
    }
  }
  for (auto& t : threads) t.join();
  logSummary();

  if (stop.requested()) {
    // What the stop cut short is not a failure of the request: never submitted, or cancelled
    // in flight by the shutdown.
    for (RequestRecord& record : records_) record.stopped = cutShortByStop(record);
  }
  result.requests = std::move(records_);
  {
    sync::MutexLock lock(mutex_);  // the workers are joined; as above
    result.wall = lastEnd_ - start_;
  }
  result.stopped = stop.requested();
  result.cpuEnd = processCpuTime();
  result.readyCpuUs = peersReadyCpuUs(agent_.usage()) - readyBefore;
  return result;
}

void PrefillDriver::worker(StopSignal& stop) {
  while (true) {
    std::size_t index;
    {
      sync::MutexLock lock(mutex_);
      if (nextIndex_ == trace_.size()) return;
      index = nextIndex_++;
    }
    replay(index, stop);
    {
      sync::MutexLock lock(mutex_);
      ++ended_;
      for (std::size_t p = 0; p < partsPerPrompt_; ++p) {
        const RequestRecord& record = records_[index * partsPerPrompt_ + p];
        if (record.submitted) --inFlight_;
        if (record.released) {
          ++released_;
          bytes_ += record.status.bytes;
        } else {
          ++failed_;
        }
      }
      lastEnd_ = Clock::now();
      wakeFirstAllocating();  // its blocks are back
    }
    promptEnded_.notify_all();
  }
}

void PrefillDriver::replay(std::size_t index, StopSignal& stop) {
  const workload::TraceRecord& trace = trace_[index];
  const std::span<RequestRecord> records(records_.data() + index * partsPerPrompt_,
                                         partsPerPrompt_);
  const std::string promptId = options_.idPrefix + "-" + std::to_string(index);
  const std::vector<SlicePart> slices =
      options_.tp.sliced() ? slicePlan(options_.tp, promptId) : std::vector<SlicePart>{};
  for (std::size_t p = 0; p < records.size(); ++p) {
    RequestRecord& record = records[p];
    record.index = index;
    record.destinationId = promptId;
    record.id = slices.empty() ? promptId : partId(promptId, slices[p].decodeRank);
    if (!slices.empty()) {
      record.decodeRank = static_cast<std::int64_t>(slices[p].decodeRank);
      record.destination = options_.decodeNames.at(slices[p].decodeRank);
      record.heads = slices[p].slice.heads;
    }
    record.tokens = trace.inputLength;
    record.prefixHashes = trace.hashIds.size();
    record.mode = modeOf(options_.mode, index);
    record.layerwise = layerwiseOf(options_.layerwise, index);
    record.arrival = fromMs(static_cast<double>(trace.timestampMs) / options_.timeScale);
    record.status.id = record.id;
  }

  const auto due = start_ + records[0].arrival;
  const bool stopped = Clock::now() < due ? stop.waitFor(due - Clock::now()) : stop.requested();
  if (stopped) {
    for (RequestRecord& record : records) {
      record.error = "not submitted: the agent was stopped (" + stop.reason() + ")";
    }
    return;
  }
  const std::uint64_t perPart = agent_.pool().blocksFor(trace.inputLength);
  auto blocks = allocate(records[0], perPart * records.size(), stop);
  if (!blocks.isOk()) {
    for (RequestRecord& record : records) {
      record.error = blocks.status().toString();
      record.waitedForBlocks = records[0].waitedForBlocks;
    }
    logFailures(records, stop);
    return;
  }
  for (RequestRecord& record : records) {
    record.sourceBlocks = perPart;
    record.waitedForBlocks = records[0].waitedForBlocks;
    record.admission = records[0].admission;
  }
  std::vector<Part> parts = makeParts(records, trace, std::move(blocks).value());
  produce(parts, trace);
  for (Part& part : parts) {
    if (part.record->submitted) finish(*part.record);
  }
  logFailures(records, stop);
}

void PrefillDriver::logFailures(std::span<const RequestRecord> records, const StopSignal& stop) {
  // Once per failed request, with its reason: the report file is not the only place to learn
  // why ("needs N blocks ... raise --blocks"). What a stop cut short is not a failure.
  const bool stopping = stop.requested();
  for (const RequestRecord& record : records) {
    if (!record.released && !record.error.empty() && !(stopping && cutShortByStop(record))) {
      spdlog::warn("request {} ({} tokens) failed: {}", record.id, record.tokens, record.error);
    }
  }
}

Result<std::vector<std::uint64_t>> PrefillDriver::allocate(RequestRecord& first,
                                                           std::uint64_t count, StopSignal& stop) {
  const std::string& prompt = first.destinationId;
  if (count > agent_.pool().blocks) {
    return resourceExhausted(prompt + " needs " + std::to_string(count) + " blocks (" +
                             std::to_string(partsPerPrompt_) + " request(s) of " +
                             std::to_string(first.tokens) + " tokens) but the prefill pool has " +
                             std::to_string(agent_.pool().blocks) + "; raise --blocks");
  }
  const auto began = Clock::now();
  const auto giveUp = began + options_.requestTimeout;
  bool counted = false;
  std::condition_variable turn;
  {
    sync::MutexLock lock(mutex_);
    allocating_.emplace(first.index, &turn);
  }
  while (true) {
    bool myTurn;
    {
      sync::MutexLock lock(mutex_);
      myTurn = allocating_.begin()->first == first.index;
    }
    auto blocks = myTurn ? agent_.allocateBlocks(count)
                         : Result<std::vector<std::uint64_t>>(
                               resourceExhausted("earlier prompts wait for room first"));
    if (blocks.isOk() || blocks.status().code() != StatusCode::kResourceExhausted ||
        stop.requested() || Clock::now() >= giveUp) {
      sync::MutexLock lock(mutex_);
      if (counted) --waitingForBlocks_;
      allocating_.erase(first.index);
      wakeFirstAllocating();  // the next prompt's turn
      first.waitedForBlocks = Clock::now() - began;
      if (blocks.isOk()) first.admission = ++admitted_;
      if (blocks.isOk() || blocks.status().code() != StatusCode::kResourceExhausted) {
        return blocks;
      }
      if (stop.requested()) {
        return cancelled("not submitted: the agent was stopped (" + stop.reason() +
                         ") while it waited for room in the prefill pool");
      }
      return blocks.status().withContext(
          "no room in the prefill pool for " + prompt + " within " +
          std::to_string(options_.requestTimeout.count()) +
          " ms (--timeout-ms); earlier requests hold the blocks: raise --blocks");
    }
    // The pool is full or an earlier prompt waits: wait for a prompt to end and return its
    // blocks, or for the turn to move on.
    sync::UniqueLock lock(mutex_);
    if (!counted) {
      ++waitingForBlocks_;
      counted = true;
    }
    const std::uint64_t endedBefore = ended_;
    const std::size_t headBefore = allocating_.begin()->first;
    turn.wait_for(lock.native(), std::chrono::milliseconds(50), [&]() KVX_REQUIRES(mutex_) {
      return ended_ != endedBefore || allocating_.begin()->first != headBefore;
    });
  }
}

void PrefillDriver::wakeFirstAllocating() {
  if (!allocating_.empty()) allocating_.begin()->second->notify_one();
}

void PrefillDriver::logSummary() {
  std::uint64_t ended, released, failed, inFlight, waiting, bytes;
  {
    sync::MutexLock lock(mutex_);
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
      "prefill: {}/{} prompts ended ({} requests released, {} failed), {} requests in flight, "
      "{} prompts waiting for blocks; {:.2f} GiB moved; pool {}/{} blocks free",
      ended, trace_.size(), released, failed, inFlight, waiting,
      static_cast<double>(bytes) / (1u << 30), usage.freeBlocks, usage.totalBlocks);
}

}  // namespace kvx::daemon
