#pragma once

// The `kvx agent` process: runs one prefill or decode KvAgent until a signal (or, for a
// prefill agent with a workload, until the workload is done). Prints "LISTENING <address>"
// once it serves and "STATS {json}" when it stops, each as one flushed line on stdout
// (process/agent_protocol.h); logs go to stderr. Writes config.report when it stops.
// Call once per process, from its main thread: it claims stdout (ProtocolOutput) and sets the
// process's log level.

#include "daemon/agent_config.h"
#include "daemon/signals.h"

namespace kvx::daemon {

// `config` must have passed validateAgentConfig. Returns the process exit code: 0 on a clean
// stop (a prefill workload: every request released), 1 when the agent failed, 2 for a
// configuration that cannot be served (an unreadable model, a report file that cannot be
// written).
int runAgent(const AgentConfig& config, StopSignal& stop);

}  // namespace kvx::daemon
