#pragma once

// The abort figures of the `control` scenario on one transport, with in-process agents.
// Each first runs its transfer or request to the end once, to learn how long it takes (D),
// then starts it again and cancels it D/4 later:
//   - measureAgentAbort: a `bytes` WRITE (1 MiB segments) between two kvx::Agents, posted
//     from a second thread: how long Agent::cancel() takes to return (after which no byte
//     lands) and how long until the completion callback reports the end, with which status
//     (CANCELLED expected). The target's memory is either allocated by UCX (as KV pools
//     are; on shm the puts are then one-sided copies made inside post() itself) or memory
//     the caller registered (RMA emulated by UCX, which the target has to progress). D is
//     the faster of two runs (the first also readies the peer's memory).
//   - measureKvAbort: a prefill KvAgent's request of `bytes` (llama3-8b blocks) to an
//     in-process decode agent, cancelled D/4 after it reached TRANSFERRING: how long from
//     KvAgent::cancel() until the request is FAILED (KvAgent::wait returns), and its code.
// A transfer or request that finished before the cancel took effect is tried again with
// the cancel sooner (D/10, then D/50 or at once), and after three tries reported as not
// measured, saying why. One more transfer (request) to the same peer then shows the link
// still works. Every wait has a deadline.
//
// Called by runControlScenario only.

#include <cstdint>
#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

enum class AbortTarget : std::uint8_t { kAllocated, kRegistered };

std::vector<ControlFigure> measureAgentAbort(const std::string& transport, std::uint64_t bytes,
                                             AbortTarget target);
std::vector<ControlFigure> measureKvAbort(const std::string& transport, std::uint64_t bytes);

}  // namespace kvx::bench
