#pragma once

// measureFixedOverhead: the `fixed-overhead` step of the `control` scenario. What one small
// transfer costs beyond moving its bytes, at the engine's level (kvx::Agent), against the
// bare UCP loop doing the same work in the same run (`kvx-bare-ucp --fixed-overhead`):
//   - one block + notification: a WRITE of one S-byte segment with a notification, posted one
//     at a time; latency from post() to the target's notification handler, and to the
//     initiator's completion callback. Bare: one S-byte put + flush + AM.
//   - notification only: Agent::sendNotification until the target's handler; bare: flush +
//     AM with no put (its --skip-data).
//   - the 4 KiB block again, with progress threads that never sleep (and a bare target that
//     never sleeps): the default rows' progress threads sleep on UCX's event fd 50 us after
//     their last event, so on tcp they pay a wake-up; this row separates that from the rest.
// The target WORKLOADS.md sets: kvx p50 <= bare p50 + 5 us. Both agents live in the step's
// process, each with its progress thread (two processes for the bare loop); timestamps are
// taken on the threads that see the event (the handler, the callback), so waking the
// measuring thread is not counted on either side.
//
// The KV agents' 1-block request (placement round trip included) is the `mla` scenario's
// "1 block" case; this step isolates the engine under it.

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

struct FixedOverheadOptions {
  std::vector<std::uint64_t> segmentBytes;  // one row per size
  std::uint32_t repeats = 0;                // measured transfers per row
  std::uint32_t warmup = 0;                 // before them, not measured
  std::string bareBinary;                   // kvx-bare-ucp; empty: no bare reference
};

std::vector<ControlFigure> measureFixedOverhead(const std::string& transport,
                                                const FixedOverheadOptions& options);

}  // namespace kvx::bench
