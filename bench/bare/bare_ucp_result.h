#pragma once

// BareUcpResult: what one run of the bare UCP reference measured, and its JSON form, which is
// what `kvx-bare-ucp` prints on stdout (one object, one line) and what runBareUcp parses.
//
// JSON schema, version 1 (every key is always present; figures are JSON numbers; objects
// marked "or null" are null when not measured):
// {
//   "tool": "kvx-bare-ucp", "schemaVersion": 1,
//   "ucxVersion": "1.13.1",
//   "mode": "loop" | "fixed-overhead" | "memcpy-only",
//   "transport": "shm" | "tcp", "netDevices": "lo", "alloc": "registered" | "ucx",
//   "memory": "host" | "cuda", "device": N,   // where the buffers live (a reader takes host
//                                              // memory when they are absent)
//   "settings": "UCX_TLS=sm,self UCX_MM_ERROR_HANDLING=y",  // kvx's describeSettings
//   "lanes": "sysv/memory, posix/memory",   // transports UCX selected for the endpoint
//   "op": "put" | "get", "pattern": "contiguous" | "random", "notify": bool,
//   "targetSpinUs": how long the target polls before sleeping on its event fd,
//   "initiatorCpu": N, "targetCpu": N,   // pinned CPUs, -1 when not pinned (a reader takes
//                                        // -1 when they are absent)
//   "segmentBytes": S, "segments": K, "window": W, "bufferBytes": B,
//   "requests": measured requests, "warmupRequests": n,
//   "seconds": wall time of the measured requests (first post to last completion),
//   "payloadBytes": requests * K * S,
//   "gbps": payloadBytes / seconds / 1e9, "opsPerSecond": .., "requestsPerSecond": ..,
//   "latencyUs": {
//     "initiator": {"count","min","mean","p50","p90","p99","max"},  // post of the first op
//                                                                     // -> flush completed
//     "receiver": {...} or null   // post of the first op -> the target's AM handler ran
//   },                            // (CLOCK_MONOTONIC in both processes); null without notify
//   "cpuUsPerRequest": {"initiator": .., "target": ..},  // getrusage user+sys over the
//                                                        // measured requests, / requests
//   "verify": {"checked": bool, "ok": bool, "detail": "..."},
//   "memcpy": {"segmentBytes","bufferBytes","bytes","seconds","gbps"} or null
// }
// Keys are only ever added; a reader ignores keys it does not know.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bench/bare/bare_ucp_options.h"
#include "kvx/result.h"
#include "workload/latency_stats.h"

namespace kvx::bench {

struct LatencyFigures {  // microseconds
  std::uint64_t count = 0;
  double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

LatencyFigures latencyFigures(const workload::LatencySummary& summary);

struct MemcpyFigures {
  std::uint64_t segmentBytes = 0;
  std::uint64_t bufferBytes = 0;  // each of source and destination
  std::uint64_t bytes = 0;        // copied in total
  double seconds = 0;
  double gbps = 0;
};

struct VerifyFigures {
  bool checked = false;
  bool ok = false;
  std::string detail;  // what was compared, and what differed
};

struct BareUcpResult {
  std::string ucxVersion;
  std::string mode = "loop";
  std::string transport;
  std::string netDevices;
  std::string alloc;
  std::string memory = "host";
  std::int64_t device = 0;
  std::string settings;
  std::string lanes;
  std::string op;
  std::string pattern;
  bool notify = false;
  double targetSpinUs = 0;
  std::int64_t initiatorCpu = -1;
  std::int64_t targetCpu = -1;
  std::uint64_t segmentBytes = 0;
  std::uint64_t segments = 0;
  std::uint64_t window = 0;
  std::uint64_t bufferBytes = 0;
  std::uint64_t requests = 0;
  std::uint64_t warmupRequests = 0;
  double seconds = 0;
  std::uint64_t payloadBytes = 0;
  double gbps = 0;
  double opsPerSecond = 0;
  double requestsPerSecond = 0;
  LatencyFigures initiatorLatency;
  std::optional<LatencyFigures> receiverLatency;
  double initiatorCpuUsPerRequest = 0;
  double targetCpuUsPerRequest = 0;
  VerifyFigures verify;
  std::optional<MemcpyFigures> memcpy;
};

// The option fields of a result (mode, transport, sizes, ...) as `options` describes them.
void describeOptions(const BareUcpOptions& options, BareUcpResult& result);

// One JSON object on one line (the schema above).
std::string toJson(const BareUcpResult& result);
// INVALID_ARGUMENT naming the key when `text` is not a version-1 kvx-bare-ucp object.
Result<BareUcpResult> parseBareUcpResult(std::string_view text);

// "bare ucp shm put 32768 B x1 w1: 5.10 GB/s, p50 6.1 us (receiver 8.0 us), verify ok".
std::string summaryLine(const BareUcpResult& result);

}  // namespace kvx::bench
