#pragma once

// The in-process agents the `control` scenario measures with: kvx::Agent and kvx::KvAgent
// options for a transport ("shm" or "tcp", as `kvx agent --transport` takes them) with a
// name unique in this process and among the processes of a run, and a wait for a peer's
// new region. Used by the measures in bench/kv/control/ only.

#include <cstdint>
#include <string>

#include "kvx/agent.h"
#include "kvx/agent_options.h"
#include "kvx/kv_types.h"

namespace kvx::bench {

// "<base>-<pid>-<n>", n counting up per call.
std::string uniqueAgentName(const std::string& base);

// An agent on 127.0.0.1 over UCX restricted to `transport`.
AgentOptions controlAgentOptions(const std::string& base, const std::string& transport);

// A KV agent with a pool of `blocks` blocks of `model` (NHD layout: one region per layer),
// requests and leases bounded at 30 s, and no per-peer admission limit below 64 GiB so that
// one large request never waits for room.
KvAgentOptions controlKvOptions(const std::string& base, KvRole role, const std::string& transport,
                                const std::string& model, std::uint64_t blocks, bool populate);

// Waits until `agent` lists `region` among `peer`'s regions: a region the peer registers
// after the first contact is announced by a metadata update that arrives asynchronously.
// TIMED_OUT at the deadline.
Status awaitPeerRegion(Agent& agent, const std::string& peer, RegionId region, Deadline deadline);

}  // namespace kvx::bench
