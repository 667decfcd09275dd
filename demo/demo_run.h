#pragma once

// `kvx demo`: a disaggregated prefill/decode setup on this machine in one command. It starts
// two decode agents (`kvx agent --role decode --verify`) and one prefill agent that replays a
// workload into them, waits for the replay (with a deadline), stops the decode agents with
// SIGTERM, and prints the KV migration latency report (demo/demo_report.h).
// With --prefill-tp P or --decode-tp D above 1 it runs one prefill instance of P ranks and one
// decode instance of D ranks instead: every prefill rank replays the same workload and sends
// each prompt's heads to the decode ranks that hold them (gathers when P > D, scatters when
// P < D), and every decode rank verifies its heads.
// The agents are this executable run as `kvx agent` (ChildProcess::spawnSelf). Call from the
// main thread of the `kvx` process: it clears the process's KVX_* variables (the agents take
// their options from the plan only).

#include "daemon/signals.h"
#include "demo/demo_plan.h"

namespace kvx::demo {

// Returns the exit code: 0 only when every request succeeded, no block was corrupt and every
// pool got all its blocks back; 2 for options that make no plan; 1 otherwise.
int runDemo(const DemoOptions& options, daemon::StopSignal& stop);

}  // namespace kvx::demo
