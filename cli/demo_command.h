#pragma once

// `kvx demo`: its options (bound to a demo::DemoOptions) and the run (demo/demo_run.h).
// Call from the main thread (CLI11).

#include "cli/cli_app_fwd.h"
#include "daemon/signals.h"
#include "demo/demo_plan.h"

namespace kvx::cli {

using demo::DemoOptions;

void addDemoOptions(CLI::App& app, DemoOptions& options);

// Returns the exit code: 0 only when every request succeeded, no block was corrupt and every
// pool got all its blocks back.
int runDemoCommand(const DemoOptions& options, daemon::StopSignal& stop);

}  // namespace kvx::cli
