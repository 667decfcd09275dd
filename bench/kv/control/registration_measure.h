#pragma once

// The registration figures of the `control` scenario on one transport, with one in-process
// kvx::Agent: how long Agent::create takes; allocateMemory of each pool size with pages
// populated and without (AllocationSpec::populate); registerMemory of memory the caller
// already owns and has touched (an anonymous mapping populated beforehand, not timed). Each
// region is deregistered (timed, in the detail) and freed before the next, and a size that
// does not fit in MemAvailable is reported as not measured.
//
// Called by runControlScenario only; blocks for the allocations (about 0.6 s per populated
// GiB here).

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

std::vector<ControlFigure> measureRegistration(const std::string& transport,
                                               const std::vector<std::uint64_t>& poolBytes);

}  // namespace kvx::bench
