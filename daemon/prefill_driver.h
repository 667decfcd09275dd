#pragma once

// PrefillDriver: a prefill agent replaying a workload. Each trace record is one prompt: at its
// timestamp / timeScale the driver allocates its source blocks (waiting for earlier prompts to
// end while the pool is full), fills them with kv_content (one layer per step of simulated
// compute, layerMs each), submits its requests with the record's hash ids as prefix hashes,
// calls layerReady per layer for layer-wise requests, and waits until every request of the
// prompt is released or failed. At most maxOutstanding prompts are in flight.
//
// Requests of a prompt: one whole request "<idPrefix>-<index>" to the destination the
// scheduler chooses; or, when the TP plan slices (kvx/tp_plan.h), one request
// "<idPrefix>-<index>@d<q>" per decode rank q this rank overlaps, pinned to decodeNames[q],
// into the decode-side request "<idPrefix>-<index>". A request owns its source blocks (the
// agent frees them when it ends), so every part gets its own set, all allocated at once.
//
// mode/layerwise "mixed": prompt i uses pull when i is odd, and is layer-wise when i / 2 is
// odd, so the four combinations take turns.
// run() is called once, from one thread; it uses maxOutstanding worker threads.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "daemon/block_order.h"
#include "daemon/report_clocks.h"
#include "daemon/request_record.h"
#include "daemon/signals.h"
#include "kvx/kv_agent.h"
#include "kvx/tp_plan.h"
#include "sync/mutex.h"
#include "workload/trace_record.h"

namespace kvx::daemon {

struct ReplayOptions {
  std::string idPrefix;           // prompt ids are "<idPrefix>-<index>"
  std::string mode = "push";      // push | pull | mixed
  std::string layerwise = "off";  // on | off | mixed
  double layerMs = 0;
  double timeScale = 1;
  std::uint64_t maxOutstanding = 32;
  std::chrono::milliseconds requestTimeout{30000};
  std::uint32_t prefixChunkTokens = workload::kPrefixChunkTokens;
  TpPlan tp;                             // this rank's heads; sliced requests when tp.sliced()
  std::vector<std::string> decodeNames;  // sliced: decode rank q's agent name
  BlockOrder blockOrder = BlockOrder::kContiguous;
  std::uint64_t seed = 1;  // for the random block order
  bool fill = true;        // write the KV content (false: --no-fill)
};

struct ReplayResult {
  std::vector<RequestRecord> requests;  // in trace order; a prompt's parts by decode rank
  std::chrono::nanoseconds wall{0};     // start of the replay to the last request's end
  bool stopped = false;                 // a signal cut it short
  CpuTime cpuStart;                     // process CPU time when the replay began
  CpuTime cpuEnd;                       // and when it ended
  std::int64_t readyCpuUs = 0;          // of that, CPU spent readying peers' pools
};

class PrefillDriver {
 public:
  // REQUIRES: options as the configuration checked them (agent_config.h); when options.tp
  // slices, one decode name per decode rank.
  PrefillDriver(KvAgent& agent, ReplayOptions options, std::vector<workload::TraceRecord> trace);

  // Replays the trace; on a stop it submits nothing more, shuts the agent down (failing what
  // is in flight within 5 s) and returns what it has.
  ReplayResult run(StopSignal& stop);

 private:
  // The requests of one prompt, before they are sent.
  struct Part {
    RequestRecord* record;
    KvRequestSpec spec;
  };

  void worker(StopSignal& stop);
  void replay(std::size_t index, StopSignal& stop);
  // Blocks for every part of the prompt (parts x blocks per part), allocated at once, first
  // come first served: a prompt allocates only when no earlier prompt is still waiting for
  // room, as a serving engine's FCFS scheduler admits its queue (vLLM's default stops at the
  // first request that does not fit). Without that, small prompts that fit the room an
  // ending prompt left would take it again and again ahead of a large one, which would
  // wait without bound.
  Result<std::vector<std::uint64_t>> allocate(RequestRecord& first, std::uint64_t count,
                                              StopSignal& stop);

  // prefill_requests.cc: a prompt's requests from its source blocks to their end.
  std::vector<Part> makeParts(std::span<RequestRecord> records, const workload::TraceRecord& trace,
                              std::vector<std::uint64_t> blocks) const;
  // Fills the blocks (simulated compute), submits, and feeds layer-wise requests their
  // layers. A part that was not submitted has record->error set and its blocks freed.
  void produce(std::vector<Part>& parts, const workload::TraceRecord& trace);
  void submit(Part& part);
  // Logs each failed request of `records` once, at warning level, with its reason.
  void logFailures(std::span<const RequestRecord> records, const StopSignal& stop);
  void finish(RequestRecord& record);
  void logSummary();

  KvAgent& agent_;
  const ReplayOptions options_;
  const std::vector<workload::TraceRecord> trace_;
  const std::size_t partsPerPrompt_;
  // Element i * partsPerPrompt_ + p is written only by the worker replaying prompt i.
  std::vector<RequestRecord> records_;
  Clock::time_point start_;

  // The first prompt in allocate(): its turn came, or blocks were freed. REQUIRES: mutex_.
  void wakeFirstAllocating() KVX_REQUIRES(mutex_);

  sync::Mutex mutex_;
  std::condition_variable promptEnded_;  // the replay's end
  std::size_t nextIndex_ KVX_GUARDED_BY(mutex_) = 0;
  std::uint64_t submitted_ KVX_GUARDED_BY(mutex_) = 0;         // requests
  std::uint64_t inFlight_ KVX_GUARDED_BY(mutex_) = 0;          // requests
  std::uint64_t released_ KVX_GUARDED_BY(mutex_) = 0;          // requests
  std::uint64_t failed_ KVX_GUARDED_BY(mutex_) = 0;            // requests
  std::uint64_t waitingForBlocks_ KVX_GUARDED_BY(mutex_) = 0;  // prompts
  std::uint64_t admitted_ KVX_GUARDED_BY(mutex_) = 0;          // prompts given their blocks
  // Prompts in allocate(), by index, each with the condition variable its worker waits on:
  // only the first may allocate, so only it is woken (wakeFirstAllocating).
  std::map<std::size_t, std::condition_variable*> allocating_ KVX_GUARDED_BY(mutex_);
  std::uint64_t bytes_ KVX_GUARDED_BY(mutex_) = 0;
  std::uint64_t ended_ KVX_GUARDED_BY(mutex_) = 0;  // prompts
  std::uint64_t endedAtLastSummary_ KVX_GUARDED_BY(mutex_) = 0;
  Clock::time_point lastEnd_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::daemon
