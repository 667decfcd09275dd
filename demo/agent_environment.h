#pragma once

// Which of the `kvx` process's KVX_* variables the demo's agents inherit. The agents take their
// options from the demo's plan only: a KVX_PEERS or KVX_TRACE meant for another run would make
// a decode agent refuse to start. Variables that locate a part of kvx or choose the process's
// runtime, not an agent option, are kept.

#include <string_view>

namespace kvx::demo {

// True for the variables an agent of the demo keeps: KVX_GPU_RUNTIME (the GPU runtime, a test
// double) and KVX_UCX_PROBE (where kvx-ucx-probe is, as on a machine the build was copied to).
bool keptForAgents(std::string_view name);

// Unsets every KVX_* variable of this process that keptForAgents refuses. Call from the main
// thread before any other thread reads the environment.
void clearAgentEnvironment();

}  // namespace kvx::demo
