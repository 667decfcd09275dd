#include "kv/local_pool.h"

#include <spdlog/spdlog.h>

namespace kvx::kv {

Result<LocalPool> LocalPool::create(Agent& agent, const KvAgentOptions& options) {
  LocalPool local;
  KVX_ASSIGN_OR_RETURN(local.pool, KvPool::create(agent, options.pool));
  const KvPoolInfo& info = local.pool->info();
  if (options.prefixChunkTokens % info.tokensPerBlock != 0) {
    return invalidArgument("prefixChunkTokens (" + std::to_string(options.prefixChunkTokens) +
                           ") must be a multiple of the pool's tokens per block (" +
                           std::to_string(info.tokensPerBlock) + ")");
  }
  local.allocator = std::make_unique<BlockAllocator>(info.blocks);
  if (options.role == KvRole::kDecode && options.checkFreeBlocks) {
    KVX_ASSIGN_OR_RETURN(local.canary, FreeBlockCanary::create(*local.pool));
    spdlog::info(
        "{}: checking free blocks for late writes (each freed block is filled, then "
        "checked when placed again and at shutdown)",
        options.agent.name);
  }
  KVX_ASSIGN_OR_RETURN(local.port, handoff::AgentKvPort::create(agent, *local.pool));
  return local;
}

}  // namespace kvx::kv
