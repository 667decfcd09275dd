#pragma once

// The initiator side of the bare reference: the whole run as `kvx-bare-ucp` performs it.
// It starts `targetBinary --role target` (with the same options) as a child process, sets up
// its own UCP state the way kvx does (BareUcpNode), connects to the target with the address
// and key the target publishes over the pipe and has the target connect back (kConnect),
// runs the warm-up requests, tells the target that the measured part starts (so that the
// target's CPU time covers only it), runs the measured RequestLoop, stops the target (which
// waits for the notifications still on their way) and collects its report (CPU time, buffer
// checksum, notification timestamps), closes the endpoint gracefully, lets the target go
// (kBye), then verifies and computes the figures.
//
// Verification (unless options.verify is false): put: the target's buffer checksum equals
// that of its own pattern with every touched slot holding the initiator's pattern, and the
// initiator's buffer is unchanged; get: the reverse. With notify, every request's
// notification must have arrived. A failed check is reported in result.verify, not as an
// error; errors are for runs that could not be completed.
//
// Runs on the calling thread; bounded by options.timeoutSeconds.

#include <string>

#include "bench/bare/bare_ucp_options.h"
#include "bench/bare/bare_ucp_result.h"
#include "kvx/result.h"

namespace kvx::bench {

Result<BareUcpResult> runBareUcpInitiator(const BareUcpOptions& options,
                                          const std::string& targetBinary);

}  // namespace kvx::bench
