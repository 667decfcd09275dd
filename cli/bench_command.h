#pragma once

// `kvx bench`: its options (bound to a bench::BenchOptions), their checks, and the run
// (bench/kv/bench_run.h). Call from the main thread (CLI11).

#include <string>
#include <vector>

#include "bench/kv/bench_run.h"
#include "cli/cli_app_fwd.h"
#include "daemon/signals.h"

namespace kvx::cli {

using bench::BenchOptions;

void addBenchOptions(CLI::App& app, BenchOptions& options);

// The checks of the options CLI11 cannot make alone (--device and --gpu-path need --memory
// cuda): INVALID_ARGUMENT naming the option.
Status validateBenchOptions(const BenchOptions& options);

// bench::runBench's exit code, or 2 when validateBenchOptions refuses the options.
int runBenchCommand(const BenchOptions& options, const std::string& commandLine,
                    daemon::StopSignal& stop);

}  // namespace kvx::cli
