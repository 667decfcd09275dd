#pragma once

// idealFifoLink: the latencies a workload would see on a perfect link, as a floor to hold a
// measured run against. Requests arrive at given times with given byte counts; one link
// moves bytes at a fixed rate, one request at a time, in arrival order (equal arrivals in
// input order), with no per-request cost and no wait for room at the destination. A
// request's latency is from its arrival until its last byte has moved.
//
// It answers "what would the tail look like if nothing but the link's rate and the order of
// arrivals mattered": a ratio such as p99/p50 that this model already misses is set by the
// workload (its bursts and its spread of sizes), not by the engine.

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "kvx/result.h"

namespace kvx::workload {

struct LinkJob {
  std::chrono::nanoseconds arrival{0};  // since any common origin
  std::uint64_t bytes = 0;
};

// One latency per job, in input order. INVALID_ARGUMENT unless bytesPerSecond is finite and
// positive; negative arrivals are allowed (only differences matter).
Result<std::vector<std::chrono::nanoseconds>> idealFifoLink(std::span<const LinkJob> jobs,
                                                            double bytesPerSecond);

}  // namespace kvx::workload
