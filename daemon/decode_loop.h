#pragma once

// DecodeLoop: what a `kvx agent --role decode` does with arrivals. It takes every request
// whose data is complete (KvAgent::nextArrival), checks every block against kv_content with
// --verify (each corrupt block is logged with the request id and block; a TP rank checks the
// heads it holds), then consumes and releases it. With a report it keeps one ArrivalRecord
// per arrival (daemon/decode_report.h has the JSON keys). Owned and driven by one thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "daemon/decode_report.h"
#include "daemon/peers.h"
#include "kvx/kv_agent.h"
#include "kvx/tp_plan.h"

namespace kvx::daemon {

struct DecodeStats {
  std::uint64_t arrivals = 0;
  std::uint64_t blocks = 0;  // arrived blocks, prefix blocks included
  std::uint64_t blocksVerified = 0;
  std::uint64_t corruptBlocks = 0;
  std::uint64_t bytes = 0;         // moved into the pool: (blocks - prefixBlocks) x blockBytes
  std::uint64_t prefixBlocks = 0;  // reused from the prefix cache
  std::uint64_t errors = 0;        // consume/release/verify calls that failed
  std::uint64_t gathered = 0;      // arrivals filled by more than one prefill agent
};

class DecodeLoop {
 public:
  // `tp`: the heads this agent's pool holds. `keepArrivals`: record every arrival.
  DecodeLoop(KvAgent& agent, bool verify, std::uint32_t prefixChunkTokens, TpPlan tp,
             bool keepArrivals);

  // Serves arrivals until `done()` returns true (tested at least every 100 ms) or the agent has
  // shut down; logs peers as they come and go, and a summary every 5 s while busy.
  void run(const std::function<bool()>& done);
  // Serves the arrivals still queued, or that complete before `deadline` (after shutdown, to
  // leave nothing holding blocks).
  void drain(Deadline deadline);
  const DecodeStats& stats() const { return stats_; }
  const std::vector<ArrivalRecord>& arrivals() const { return arrivals_; }
  // Process CPU time once the last arrival was handled (kept arrivals only): the end of the
  // serving work, before any teardown.
  const std::optional<CpuTime>& cpuAfterLastArrival() const { return cpuAfterLastArrival_; }

 private:
  void handle(const KvArrival& arrival);
  void verify(const KvArrival& arrival, ArrivalRecord& record);
  void logSummary();

  KvAgent& agent_;
  const bool verify_;
  const std::uint32_t prefixChunkTokens_;
  const TpPlan tp_;
  const bool keepArrivals_;
  PeerWatch peers_;
  DecodeStats stats_;
  std::vector<ArrivalRecord> arrivals_;
  std::optional<CpuTime> cpuAfterLastArrival_;
  std::uint64_t arrivalsAtLastSummary_ = 0;
  std::uint64_t heldAtLastSummary_ = 0;
};

}  // namespace kvx::daemon
