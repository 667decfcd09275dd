#include "cli/agent_command.h"

#include <cstdio>

#include "cli/agent_options.h"
#include "daemon/agent_daemon.h"

namespace kvx::cli {

int runAgentCommand(CLI::App& app, AgentConfig& config, daemon::StopSignal& stop) {
  if (Status s = finishAgentConfig(app, config); !s.isOk()) {
    std::fprintf(stderr, "kvx agent: %s\nRun 'kvx agent --help' for the options.\n",
                 s.message().c_str());
    return 2;
  }
  if (config.printConfig) {
    std::fputs(configJson(app).c_str(), stdout);
    return 0;
  }
  return daemon::runAgent(config, stop);
}

}  // namespace kvx::cli
