#pragma once

// One step of the `control` scenario (see bench/kv/control/control_scenario.h), run in the
// calling process: what `kvx bench --scenario control --control-step STEP` does in the
// process runControlScenario starts for it. Blocks for the length of the step.

#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"
#include "bench/kv/control/control_scenario.h"
#include "kvx/result.h"

namespace kvx::bench {

// "registration", "metadata", "handshake", "descriptors", "fixed-overhead",
// "abort-agent-allocated", "abort-agent-registered", "abort-kv", "peer-death", in the order they
// run.
std::vector<std::string> controlStepNames();

// The group its figures are listed under ("abort" for every abort-* step).
std::string controlStepGroup(const std::string& step);

// Runs `step` over `transport` with the sizes of options.quick; sets this process's log
// level (ControlOptions::logLevel). NOT_FOUND for an unknown step, listing the names.
Result<std::vector<ControlFigure>> runControlStep(const std::string& step,
                                                  const std::string& transport,
                                                  const ControlOptions& options);

}  // namespace kvx::bench
