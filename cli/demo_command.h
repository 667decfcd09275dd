#pragma once

// `kvx demo`: a disaggregated prefill/decode setup on this machine in one command. It starts
// two decode agents (`kvx agent --role decode --verify`) and one prefill agent that replays a
// workload into them, waits for the replay (with a deadline), stops the decode agents with
// SIGTERM, and prints the KV migration latency report (cli/demo_report.h).
// With --prefill-tp P or --decode-tp D above 1 it runs one prefill instance of P ranks and one
// decode instance of D ranks instead: every prefill rank replays the same workload and sends
// each prompt's heads to the decode ranks that hold them (gathers when P > D, scatters when
// P < D), and every decode rank verifies its heads.

#include "cli/cli_app_fwd.h"
#include "cli/demo_plan.h"
#include "daemon/signals.h"

namespace kvx::cli {

void addDemoOptions(CLI::App& app, DemoOptions& options);

// Returns the exit code: 0 only when every request succeeded, no block was corrupt and every
// pool got all its blocks back.
int runDemoCommand(const DemoOptions& options, daemon::StopSignal& stop);

}  // namespace kvx::cli
