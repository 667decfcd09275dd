#pragma once

// SideContext: what the prefill and decode state machines share: the port to the data
// path, the local pool's geometry, the published view of requests, the way back onto the
// service thread, and the settings. All members are used on the KV service thread only.

#include <functional>

#include "kv/handoff/kv_port.h"
#include "kv/handoff/request_board.h"
#include "kv/pool/block_allocator.h"
#include "kv/pool/free_block_canary.h"
#include "kv/pool/pool_description.h"
#include "kvx/kv_types.h"

namespace kvx::kv::handoff {

struct SideContext {
  std::string name;  // this agent's, for logs
  KvPort& port;
  kv::PoolDescription pool;  // the local pool
  kv::BlockAllocator& allocator;
  RequestBoard& board;
  std::function<void(std::function<void()>)> postToLoop;  // runs a task on the service thread
  KvAgentOptions options;
  kv::FreeBlockCanary* canary = nullptr;  // decode with options.checkFreeBlocks

  std::uint64_t blockBytes() const {
    return pool.shape.segmentBytes() * pool.shape.kvCount() * pool.shape.layers;
  }
  std::uint64_t blocksPerChunk() const {
    return options.prefixChunkTokens / pool.shape.tokensPerBlock;
  }
};

}  // namespace kvx::kv::handoff
