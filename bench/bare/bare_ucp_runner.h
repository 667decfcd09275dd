#pragma once

// runBareUcp: how `kvx bench` (or a test) gets the bare UCP reference for its configuration
// without knowing how it is measured. It starts the `kvx-bare-ucp` binary at `binaryPath`
// with the arguments for `options` (bare_ucp_cli.h), waits for it within
// options.timeoutSeconds plus a margin, and parses the JSON it prints (bare_ucp_result.h).
//
// The run happens in two processes of its own (the binary and the target it starts), so
// the caller's process must not be competing for the CPU meanwhile if the figures matter.
// A run whose verification failed is still a result (result.verify.ok is false); errors are
// for runs that produced no result, with the tool's stderr in the message.
//
// Blocking; any thread.

#include <string>

#include "bench/bare/bare_ucp_options.h"
#include "bench/bare/bare_ucp_result.h"
#include "kvx/result.h"

namespace kvx::bench {

// Exit codes of kvx-bare-ucp.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;        // no result: the reason is on stderr
inline constexpr int kExitUsage = 2;         // bad command line
inline constexpr int kExitVerifyFailed = 3;  // a result, but the bytes did not check out

Result<BareUcpResult> runBareUcp(const BareUcpOptions& options, const std::string& binaryPath);

}  // namespace kvx::bench
