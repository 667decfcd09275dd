#pragma once

// The target process of the bare reference (`kvx-bare-ucp --role target`, started by the
// initiator). It maps a buffer as the options say, fills it with the target pattern,
// publishes its worker address, packed key and buffer address (TargetHello), then serves
// the initiator's emulated RMA by progressing: it drains ucp_worker_progress, arms the worker
// (ucp_worker_arm; UCS_ERR_BUSY means progress again) and blocks in poll() on the worker's
// event fd and the pipe from the initiator, as a kvx agent's progress thread does when idle.
// Each notification AM is timestamped (CLOCK_MONOTONIC) in its handler. On kStop it
// checksums its buffer and sends a TargetReport.
//
// The target opens an endpoint back to the initiator (kConnect), as a kvx agent holds one
// to each of its peers. It matters: measured here with UCX-allocated buffers on shm (where
// put/get never involve the target), a target without an endpoint of its own received each
// notification AM 4-8 ms late and sometimes only when its poll() timed out (1 s), even while
// spinning; with the endpoint, 5 us.
//
// Single-threaded. Every wait is bounded by options.timeoutSeconds; the pipe closing (the
// initiator died) ends the run with PEER_FAILED.

#include "bench/bare/bare_ucp_options.h"
#include "bench/bare/pipe_channel.h"
#include "kvx/status.h"

namespace kvx::bench {

// Runs until the initiator sends kStop (OK) or something fails. On failure it also tries to
// send kError with the reason before returning it.
Status runBareUcpTarget(const BareUcpOptions& options, PipeChannel& channel);

}  // namespace kvx::bench
