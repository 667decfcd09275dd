#pragma once

// The descriptor figures of the `control` scenario on one transport, with two in-process
// agents (an initiator and a target, each with a populated region of `descriptors` x the
// segment size):
//   - prepareLocalList / prepareRemoteList of `descriptors` entries: the calling thread's
//     CPU time (CLOCK_THREAD_CPUTIME_ID) per entry, median of `repeats`, after one remote
//     list has readied the peer (the readying is the handshake's figure);
//   - per segment size: thread CPU of makeTransfer + post of a `descriptors`-entry WRITE
//     whose local and remote indices are two independent random permutations (nothing can
//     coalesce: the transfer's operations are checked to equal its descriptors), divided by
//     `descriptors`, median of `repeats`; against the WORKLOADS.md target of 100 ns. The
//     initiator's maxOpsInFlight is `descriptors`, so post() itself puts every operation on
//     the caller's thread (with the default window of 256 the progress thread would post the
//     rest, outside the measured thread). Post includes UCX's own per-operation cost and,
//     where the transport copies on the caller's thread (shm into memory UCX allocated), the
//     copy of the data: the smallest segment shows the per-descriptor overhead.
// Waiting for each transfer to finish is not timed (deadline 60 s).
//
// Called by runControlScenario only.

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

std::vector<ControlFigure> measureDescriptors(const std::string& transport,
                                              std::uint32_t descriptors,
                                              const std::vector<std::uint64_t>& segmentBytes,
                                              std::uint32_t repeats);

}  // namespace kvx::bench
