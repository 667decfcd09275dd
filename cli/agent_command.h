#pragma once

// `kvx agent`: finishes the parsed options (the --config file, the checks), prints them with
// --print-config, and otherwise runs the agent (daemon::runAgent) until it stops.

#include "cli/agent_options.h"
#include "cli/cli_app_fwd.h"
#include "daemon/signals.h"

namespace kvx::cli {

// `app` is the parsed `agent` subcommand whose options are bound to `config`.
// Returns the process exit code: daemon::runAgent's, or 2 for a configuration error.
int runAgentCommand(CLI::App& app, AgentConfig& config, daemon::StopSignal& stop);

}  // namespace kvx::cli
