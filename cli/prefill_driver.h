#pragma once

// PrefillDriver: a prefill agent replaying a workload. Each trace record becomes one request:
// at its timestamp / timeScale the driver allocates ceil(tokens / tokensPerBlock) blocks
// (waiting for earlier requests to end while the pool is full), fills them with kv_content
// (one layer per step of simulated compute, layerMs each), submits them with the record's hash
// ids as prefix hashes, calls layerReady per layer for layer-wise requests, and waits until
// the request is released or failed. At most maxOutstanding requests are in flight.
// mode/layerwise "mixed": request i uses pull when i is odd, and is layer-wise when i / 2 is
// odd, so the four combinations take turns.
// run() is called once, from one thread; it uses maxOutstanding worker threads.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cli/request_record.h"
#include "cli/signals.h"
#include "kvx/kv_agent.h"
#include "workload/trace_record.h"

namespace kvx::cli {

struct ReplayOptions {
  std::string idPrefix;           // request ids are "<idPrefix>-<index>"
  std::string mode = "push";      // push | pull | mixed
  std::string layerwise = "off";  // on | off | mixed
  double layerMs = 0;
  double timeScale = 1;
  std::uint64_t maxOutstanding = 32;
  std::chrono::milliseconds requestTimeout{30000};
  std::uint32_t prefixChunkTokens = workload::kPrefixChunkTokens;
};

struct ReplayResult {
  std::vector<RequestRecord> requests;  // in trace order
  std::chrono::nanoseconds wall{0};     // start of the replay to the last request's end
  bool stopped = false;                 // a signal cut it short
};

class PrefillDriver {
 public:
  PrefillDriver(KvAgent& agent, ReplayOptions options, std::vector<workload::TraceRecord> trace);

  // Replays the trace; on a stop it submits nothing more, shuts the agent down (failing what
  // is in flight within 5 s) and returns what it has.
  ReplayResult run(StopSignal& stop);

 private:
  void worker(StopSignal& stop);
  void replay(std::size_t index, StopSignal& stop);
  Result<std::vector<std::uint64_t>> allocate(RequestRecord& record, StopSignal& stop);
  // Fills the blocks (simulated compute), submits, and feeds layer-wise requests their layers.
  // false when the request was not submitted (record.error says why; the blocks are freed).
  bool produce(RequestRecord& record, const std::vector<std::uint64_t>& blocks,
               const workload::TraceRecord& trace);
  void finish(RequestRecord& record);
  void logSummary();

  KvAgent& agent_;
  const ReplayOptions options_;
  const std::vector<workload::TraceRecord> trace_;
  std::vector<RequestRecord> records_;  // element i is written only by the worker replaying i
  Clock::time_point start_;

  std::mutex mutex_;
  std::condition_variable requestEnded_;
  std::size_t nextIndex_ = 0;             // GUARDED_BY(mutex_)
  std::uint64_t submitted_ = 0;           // GUARDED_BY(mutex_)
  std::uint64_t inFlight_ = 0;            // GUARDED_BY(mutex_)
  std::uint64_t released_ = 0;            // GUARDED_BY(mutex_)
  std::uint64_t failed_ = 0;              // GUARDED_BY(mutex_)
  std::uint64_t waitingForBlocks_ = 0;    // GUARDED_BY(mutex_)
  std::uint64_t bytes_ = 0;               // GUARDED_BY(mutex_)
  std::uint64_t ended_ = 0;               // GUARDED_BY(mutex_)
  std::uint64_t endedAtLastSummary_ = 0;  // GUARDED_BY(mutex_)
  Clock::time_point lastEnd_;             // GUARDED_BY(mutex_)
};

}  // namespace kvx::cli
