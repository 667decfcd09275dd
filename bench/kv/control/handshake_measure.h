#pragma once

// The first-contact figures of the `control` scenario on one transport: for each of
// `pairs` fresh pairs of in-process KV agents (a decode agent, then a prefill agent; llama3-8b
// pools of `poolBlocks` blocks, pages not populated; neither has met a peer before), the
// wall time from KvAgent::connect on the prefill agent until KvAgent::peers() lists the
// decode agent as compatible: the control-channel hello with both metadata, the KV hello
// with both pool descriptions, and readying the decode agent's pool for PUSH. Reported as
// p50 and max; the one-time readying CPU (KvPeerStatus::readyCpuNs) as p50 beside it.
// Agent creation is not timed.
//
// Called by runControlScenario only; every wait has a deadline (10 s).

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

std::vector<ControlFigure> measureHandshake(const std::string& transport, std::uint32_t pairs,
                                            std::uint64_t poolBlocks);

}  // namespace kvx::bench
