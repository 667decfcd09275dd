#pragma once

// LocalPool: a KV agent's own pool and what works on it: the pool laid over its registered
// regions, the allocator of its blocks, the free-block canary (a decode agent with
// checkFreeBlocks) and the port through which its request state machines move blocks between
// it and peers' pools.
//
// Threads: the pool's segment calls from any thread (KvPool's contract); the allocator, the
// canary and the port on the KV service thread only. Members are destroyed port first, pool
// last (the port and the canary use the pool).

#include <memory>

#include "kv/handoff/agent_kv_port.h"
#include "kv/pool/block_allocator.h"
#include "kv/pool/free_block_canary.h"
#include "kv/pool/kv_pool.h"
#include "kvx/agent.h"
#include "kvx/kv_types.h"

namespace kvx::kv {

struct LocalPool {
  // Registers the pool of `options` with `agent`. INVALID_ARGUMENT where prefixChunkTokens
  // is not a multiple of the pool's tokens per block.
  static Result<LocalPool> create(Agent& agent, const KvAgentOptions& options);

  std::unique_ptr<KvPool> pool;
  std::unique_ptr<BlockAllocator> allocator;
  std::unique_ptr<FreeBlockCanary> canary;  // decode with checkFreeBlocks; else null
  std::unique_ptr<handoff::AgentKvPort> port;
};

}  // namespace kvx::kv
