#pragma once

// `kvx agent`: runs one prefill or decode KvAgent until a signal (or, for a prefill agent with
// a workload, until the workload is done). Prints "LISTENING <address>" once it serves and
// "STATS {json}" when it stops, each as one flushed line on stdout; logs go to stderr.

#include "cli/agent_config.h"
#include "cli/cli_app_fwd.h"
#include "cli/signals.h"

namespace kvx::cli {

// `app` is the parsed `agent` subcommand whose options are bound to `config`.
// Returns the process exit code: 0 on a clean stop (a prefill workload: every request
// released), 1 when the agent failed, 2 for a configuration error.
int runAgentCommand(CLI::App& app, AgentConfig& config, StopSignal& stop);

}  // namespace kvx::cli
