#pragma once

// CaseMetrics: the figures of one case, computed from the reports its agent processes wrote
// (the prefill agents' --report files and the decode agents' --report files; the keys they
// carry are documented in daemon/prefill_report.h and daemon/decode_loop.h).
//   notified: submit() on the prefill agent until the decode agent's nextArrival() returned
//             the request (post -> receiver notification), across processes through
//             CLOCK_MONOTONIC; for a gather, from the earliest part's submit.
//   done:     submit() until the prefill agent saw the request released (initiator done).
//   GB/s:     payload bytes / busy time, the time at least one request was in flight
//             (submit .. done) on any prefill agent: gaps while a prefill agent computes
//             (fills) its next prompt with nothing in flight are not transfer time. With
//             one request in flight this is bytes / latency, the "effective bandwidth" of
//             WORKLOADS.md; the bare loop always has requests in flight. Also the median
//             over requests of bytes / done-latency.
//   CPU:      each side's process CPU time (user + system) over the run, per request.
// Pure functions of their inputs.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/kv/bench_case.h"
#include "kvx/result.h"
#include "workload/latency_stats.h"

namespace kvx::bench {

struct CaseMetrics {
  std::uint64_t requests = 0;  // prefill-side requests (parts, for sliced cases)
  std::uint64_t released = 0;
  std::uint64_t failed = 0;
  std::vector<std::string> errors;  // the first few failures' messages
  std::uint64_t bytes = 0;          // payload moved
  double wallSeconds = 0;           // first submit .. last done
  double busySeconds = 0;           // time with a request in flight
  double gbps = 0;                  // bytes / busy time, GB/s (1e9 B/s)
  double medianRequestGbps = 0;     // median over requests of bytes / done latency
  workload::LatencySummary notified;
  workload::LatencySummary done;
  std::vector<double> notifiedMs;  // every sample, ascending (for the CDF plot)
  double descriptorsPerRequest = 0;
  double operationsPerRequest = 0;
  double descriptorsPerSecond = 0;  // descriptors / busy time
  double prefillCpuUsPerRequest = 0;
  double decodeCpuUsPerRequest = 0;
  std::uint64_t arrivals = 0;  // decode-side requests complete
  std::uint64_t verifiedBlocks = 0;
  std::uint64_t corruptBlocks = 0;
  // Incast: goodput of each prefill agent (its bytes / its own first submit .. last done).
  std::vector<double> senderGbps;
  double jainFairness = 0;
  // Layer-wise: the receiver's notification minus the moment the last layer was handed
  // over (the prefill report's lastLayerNs; sleeps that overshoot do not count).
  workload::LatencySummary exposedTail;
  // The done latency per MiB each request moved (as nanoseconds per MiB), over requests that
  // moved bytes. With a mix of prompt sizes (`trace`) the raw latency's p99/p50 mostly says
  // how unequal the prompts are; this one says how much the load slowed a request beyond
  // its size (queueing behind others, unfair service).
  workload::LatencySummary donePerMiB;
  // Where a request's done latency goes: waiting to be placed (submit -> the scheduler chose
  // its destination blocks: the placement round trip, a full decode pool) and moving (placed
  // -> done: its bytes on a link shared with the other requests in flight). And how late
  // after its (scaled) trace arrival it was submitted (the in-flight window, a full prefill
  // pool): time the done latency does not count.
  workload::LatencySummary placing;
  workload::LatencySummary moving;
  workload::LatencySummary submitLag;
  // The user's view of a replayed trace: from a request's (scaled) trace arrival until done
  // (submit lag + done). And the floor the workload itself sets: the same requests, their
  // arrivals and the bytes each moved, on an ideal link (workload/ideal_link.h) at this
  // run's own rate (`gbps`), one at a time in arrival order, with no placement, no pool
  // limit and no per-request cost.
  workload::LatencySummary sinceArrival;
  workload::LatencySummary idealLink;
};

// The metrics of `c` from its reports. PROTOCOL_ERROR names a report that lacks a field it
// needs.
Result<CaseMetrics> computeMetrics(const BenchCase& c,
                                   const std::vector<nlohmann::json>& prefillReports,
                                   const std::vector<nlohmann::json>& decodeReports);

// The decode-side id of a prefill request: the gather group for "<group>@d<rank>" ids.
std::string destinationIdOf(const std::string& prefillId);

}  // namespace kvx::bench
