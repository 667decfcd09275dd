#pragma once

// The `kvx agent` command line: its options (each also a KVX_* variable and a key of the
// --config JSON file), bound to a daemon::AgentConfig. The precedence is AgentConfig's.
// Call from one thread (CLI11 is not thread-safe).

#include <string>
#include <vector>

#include "cli/cli_app_fwd.h"
#include "daemon/agent_config.h"
#include "kvx/result.h"

namespace kvx::cli {

using daemon::AgentConfig;

// Adds every `kvx agent` option to `app`, bound to `config`, each with its KVX_* variable.
// The bound fields keep `config`'s current values as defaults.
void addAgentOptions(CLI::App& app, AgentConfig& config);

// After app.parse(): applies the config file (if any) to the options still unset, then checks
// the result (daemon::validateAgentConfig). INVALID_ARGUMENT / NOT_FOUND name the option or
// key and what to do.
Status finishAgentConfig(CLI::App& app, AgentConfig& config);

// Parses `args` (what follows `kvx agent`) with the environment and config file, validated.
// For tests and embedding; INVALID_ARGUMENT carries CLI11's message for command-line errors.
Result<AgentConfig> parseAgentConfig(const std::vector<std::string>& args);

// The effective configuration as JSON (the format --config reads).
std::string configJson(const CLI::App& app);

}  // namespace kvx::cli
