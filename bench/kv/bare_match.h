#pragma once

// The bare UCP loop that matches a kvx case as it ran: the same transport, the same
// direction (PUSH: put; PULL: get), the operation size kvx put on the wire (payload per
// request / operations per request, which is the segment size when nothing coalesced and
// the coalesced run size when it did), as many operations per request, the same window,
// one notification after each request's data, memory mapped as kvx maps the pools it
// allocates (UCP_MEM_MAP_ALLOCATE), and a target that spins as long as kvx's progress thread
// before it sleeps. GPU pools moved by the direct path get a loop on GPU memory of the same
// device (registered device memory); staged ones keep a host loop: the wire they cross. Pure.

#include <string>

#include "bench/bare/bare_ucp_options.h"
#include "bench/kv/bench_case.h"
#include "bench/kv/case_metrics.h"

namespace kvx::bench {

// kvx's progress thread polls this long after the last event before it sleeps.
inline constexpr double kKvxProgressSpinUs = 50;

// The UCX transport of the bare loop for kvx's data path `transport`: itself, or tcp for
// kvx's socket transport (no UCX loop of its own; UCX over the same TCP path is its ceiling).
inline std::string bareTransportFor(const std::string& transport) {
  return transport == "socket" ? "tcp" : transport;
}

// Whether the bare loop of a run with pools in `memoryKind` memory moved by `gpuPath` over
// `transport` runs on GPU memory: CUDA pools on the direct path ("auto" may stage, so it
// keeps the host loop), over UCX (the socket transport copies GPU memory through host memory
// and its bare reference is UCX over tcp on host memory).
inline bool bareOnGpu(const std::string& memoryKind, const std::string& gpuPath,
                      const std::string& transport) {
  return memoryKind == "cuda" && gpuPath == "direct" && transport != "socket";
}

BareUcpOptions matchingBare(const BenchCase& c, const CaseMetrics& kvx, std::uint64_t segmentBytes);

}  // namespace kvx::bench
