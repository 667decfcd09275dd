#pragma once

// The vocabulary of the KV-cache layer: pools of paged KV blocks, requests that move a
// prompt's blocks from a prefill agent to a decode agent, and their life cycle.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvx/agent_options.h"
#include "kvx/memory.h"
#include "kvx/status.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

enum class KvRole : std::uint8_t { kPrefill, kDecode };
std::string_view toString(KvRole role);
std::optional<KvRole> parseKvRole(std::string_view text);  // "prefill", "decode"

// Who moves the bytes: PUSH = the prefill agent WRITEs into the decode agent's blocks
// (Mooncake's connector); PULL = the decode agent READs from the prefill agent's blocks
// (vLLM's NIXL connector).
enum class KvMode : std::uint8_t { kPush, kPull };
std::string_view toString(KvMode mode);
std::optional<KvMode> parseKvMode(std::string_view text);  // "push", "pull"

// A pool of KV-cache blocks: a model shape, a layout and a number of blocks.
struct KvPoolSpec {
  // A built-in shape ("llama3-8b", "qwen2.5-32b", "llama3-70b", "deepseek-v3") or a JSON
  // object ({"name":..., "layers":..., "kvHeads":..., "headDim":..., "dtypeBytes":...,
  // "tokensPerBlock":..., "mla":...}).
  std::string model = "llama3-8b";
  std::string layout = "nhd";  // "nhd", "hnd", "blocks-first", "cross-layer"
  std::uint64_t blocks = 0;
  // Memory the server already owns (its KV tensors): one base address per tensor of the
  // layout (one per layer; one in all for cross-layer), each KvPoolInfo::tensorBytes long.
  // The caller keeps ownership and keeps it valid while the agent lives.
  // Empty: the agent allocates the pool itself.
  std::vector<void*> tensors;
  // The bytes of each of `tensors`, where the caller knows them (one per tensor, or empty):
  // a tensor shorter than KvPoolInfo::tensorBytes is refused (INVALID_ARGUMENT naming both
  // sizes) before anything is registered, since peers would write past its end.
  std::vector<std::uint64_t> tensorBytes;
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;
  // A pool the agent allocates: populate its pages at start-up (AllocationSpec::populate).
  bool populate = true;
};

// What a pool turned out to be.
struct KvPoolInfo {
  std::string model;
  std::string layout;
  std::uint64_t blocks = 0;
  std::uint32_t layers = 0;
  std::uint32_t kvCount = 2;  // 1 for MLA
  std::uint32_t tokensPerBlock = 0;
  std::uint64_t segmentBytes = 0;  // one (block, layer, K or V)
  std::uint64_t blockBytes = 0;    // one block over all layers, K and V
  std::uint32_t tensors = 0;
  std::uint64_t tensorBytes = 0;
  // Where the pool lives, as its spec declared it (the engine checks the declaration
  // against the memory when it registers it): host, or CUDA memory of `device`.
  MemoryKind memory = MemoryKind::kHost;
  int device = -1;  // -1 for host memory

  // Blocks that hold `tokens` tokens (the last one may be partly filled).
  std::uint64_t blocksFor(std::uint64_t tokens) const {
    return (tokens + tokensPerBlock - 1) / tokensPerBlock;
  }
};

// Free space in a pool.
// One segment of a pool: block, layer, K (0) or V (1). For KvAgent::readSegments and
// writeSegments.
struct KvSegmentRef {
  std::uint64_t block = 0;
  std::uint32_t layer = 0;
  std::uint32_t kv = 0;
};

struct KvPoolUsage {
  std::uint64_t totalBlocks = 0;
  std::uint64_t freeBlocks = 0;
  std::uint64_t freeExtents = 0;
  std::uint64_t largestFreeExtent = 0;
  std::uint64_t cachedPrefixBlocks = 0;  // decode: blocks kept for prefix reuse
  // Decode: blocks of failed PUSH requests kept out of the pool until no byte of their lost
  // prefill agent can land in them (lostPushHold; over shared memory, until that agent
  // answers an abort or its process ends: docs/reliability.md, "A stopped initiator").
  std::uint64_t heldBlocks = 0;
  // CPU spent so far readying peers' pools on the data path (all peers, departed ones too):
  // a one-time cost per peer, see KvPeerStatus::readyCpuNs.
  std::uint64_t peersReadyCpuNs = 0;
  // Decode with checkFreeBlocks: blocks found written while they were free (late writes).
  std::uint64_t lateWrites = 0;
};

struct KvAgentOptions {
  AgentOptions agent;  // name, listen address, transport, ...
  KvRole role = KvRole::kPrefill;
  KvPoolSpec pool;
  KvMode defaultMode = KvMode::kPush;
  // Prefill: from submit until the destination confirmed (queueing included).
  std::chrono::milliseconds requestTimeout{30000};
  // Decode: blocks reserved for a request are reclaimed when it is not complete this long
  // after placement, or not consumed this long after completion. Prefill: the lease it asks
  // for; a decode agent grants the shorter of that and its own.
  std::chrono::milliseconds leaseTimeout{30000};
  // Prefill: admission control per decode agent.
  std::uint64_t maxInFlightBytesPerPeer = 1ull << 30;
  // Decode: the most blocks one prefill agent may have here at once for PUSH writes (placed
  // and not yet confirmed, plus those held for it after it was lost: heldBlocks), so that a
  // writer that stops, and so holds what it was writing, can hold no more. A request beyond
  // it is refused at placement (RESOURCE_EXHAUSTED, retryable: the prefill agent tries
  // again when room frees, or another decode agent); one that alone needs more is refused
  // for good (INVALID_ARGUMENT). 0: no cap.
  std::uint64_t maxPushBlocksPerPeer = 0;
  // Prefill: requests waiting for room beyond this are refused.
  std::size_t queueCapacity = 1024;
  // Decode: blocks kept after release for prefix reuse (0: no prefix cache).
  std::uint64_t prefixCacheBlocks = 0;
  // Tokens per prefix hash id (the Mooncake trace format uses 512).
  std::uint32_t prefixChunkTokens = 512;
  // A peer this agent connected to and then lost (it died, restarted, its link was cut or
  // its data path failed) is dialed again at the same address until it is back, waiting
  // 100 ms, then twice as long each time up to reconnectMaxDelay between attempts.
  bool reconnect = true;
  std::chrono::milliseconds reconnectMaxDelay{2000};
  // How long one such attempt may take. A connect is a control handshake, a data-path
  // endpoint and the KV hello, several round trips each: under 30% packet loss it took 3 to
  // 6 s, so a shorter attempt there never completes.
  std::chrono::milliseconds reconnectAttemptTimeout{10000};
  // Decode: the blocks of a PUSH request whose prefill agent was lost before its data was
  // confirmed stay out of the pool this long before they are reused. What keeps the lost
  // agent's queued bytes out of reused blocks is the order, not this hold: the engine closes
  // a lost peer's data path before it lists the peer as gone, and the blocks are freed only
  // once the peer is seen gone (peer_stop_test runs with 0). The hold is a margin on top, for
  // a transport that would still deliver bytes of a closed endpoint. Short, as a lost peer's
  // blocks must come back within peerTimeout plus about a second. Bytes still in the lost
  // peer's own kernel when a link is cut are not bounded by either (docs/reliability.md,
  // "Late bytes"). Where the lost agent's process copies into this pool itself (UCX over
  // shared memory, CUDA IPC: Agent::peerWritesDirectly), no close and no timer stops it: its
  // blocks also wait until it joins again and answers an abort of the request, or its
  // process ends (KvPoolUsage::heldBlocks).
  std::chrono::milliseconds lostPushHold{250};
  // Decode, host pools: fill every block going back to the pool with a pattern and check it
  // when the block is handed out again, and every block still free at shutdown. A changed
  // block is a late write (a transfer that wrote after its request ended): logged as an
  // error ("LATE WRITE") and counted in KvPoolUsage::lateWrites. For tests and fault
  // drills: each freed block is written and read once more. A CUDA pool refuses it at
  // create (FAILED_PRECONDITION).
  bool checkFreeBlocks = false;
};

// Tensor-parallel slicing: a request that moves only some KV heads. Heads [sourceFirstHead,
// sourceFirstHead + heads) of every source segment land in heads [destinationFirstHead,
// destinationFirstHead + heads) of the destination's (strided pieces in token-major
// layouts, one piece per segment in HND). Several sliced requests, from one or several
// prefill agents, can fill one destination request together (a gather): they name the same
// destinationId and `sources`, and the decode side sees one arrival once all of them landed.
// Example, prefill TP8 -> decode TP4 of a model with 8 KV heads: decode rank 0 holds heads
// 0-1 and gathers from prefill ranks 0 and 1: both submit {0, r, 1, "req-7", 2} to it.
struct KvSlice {
  std::uint32_t sourceFirstHead = 0;
  std::uint32_t destinationFirstHead = 0;
  std::uint32_t heads = 0;
  std::string destinationId;  // the id the decode side sees; empty: the request's own id
  std::uint32_t sources = 1;  // requests that fill the destination request together
};

// One request: a prompt's KV blocks on the prefill agent, to be moved to a decode agent.
struct KvRequestSpec {
  std::string id;  // unique among live requests of this agent
  std::uint64_t tokens = 0;
  // The prefill pool's blocks holding the prompt, in token order (ceil(tokens /
  // tokensPerBlock) of them). Submit hands them to the agent, which frees them when the
  // request ends (after the destination confirmed, or on failure).
  std::vector<std::uint64_t> sourceBlocks;
  // Optional: one id per prefixChunkTokens tokens of the prompt; equal ids mean an equal
  // prefix. Chunks already held by the destination are not moved again.
  std::vector<std::uint64_t> prefixHashes;
  std::optional<KvMode> mode;  // default: the agent's
  // true: the data of layer i moves once layerReady(id, i) is called; false: all at once.
  bool layerwise = false;
  // Layer-wise, for a producer that writes layers into the source blocks while the request
  // runs: a request that fails keeps its source blocks (and stays live, FAILED) until the
  // producer calls layerReady for it again (which then fails, FAILED_PRECONDITION) or
  // cancel, or had handed over every layer, so that a layer it is still writing never lands
  // in blocks given to another request. Without it the blocks go back once the request's
  // moves drained, and the producer must not write into them after the request failed.
  bool keepSourceForProducer = false;
  std::optional<std::string> destination;  // a decode agent's name; default: the scheduler's
  std::chrono::milliseconds timeout{0};    // 0: the agent's requestTimeout
  // Only these heads, into this destination request (see KvSlice). Requires `destination`:
  // tensor-parallel ranks are not interchangeable. Empty: whole segments, into a request of
  // the same id, which needs a destination pool with as many KV heads as this one.
  std::optional<KvSlice> slice;
};

// placed -> transferring -> complete -> consumed -> released; or failed from any state.
// kQueued: waiting for a destination with room (prefill side only).
enum class KvRequestState : std::uint8_t {
  kQueued,
  kPlaced,
  kTransferring,
  kComplete,
  kConsumed,
  kReleased,
  kFailed,
};
std::string_view toString(KvRequestState state);
inline bool isTerminal(KvRequestState s) {
  return s == KvRequestState::kReleased || s == KvRequestState::kFailed;
}

struct KvRequestStatus {
  std::string id;
  KvRequestState state = KvRequestState::kQueued;
  Status status;     // why it failed
  std::string peer;  // the other agent
  KvMode mode = KvMode::kPush;
  std::string placement;                // why the scheduler chose this destination
  std::uint64_t blocks = 0;             // destination blocks of the request
  std::uint64_t prefixBlocks = 0;       // of which already present there (not moved)
  std::uint64_t bytes = 0;              // moved
  std::uint64_t descriptors = 0;        // segments handed to the engine
  std::uint64_t operations = 0;         // after coalescing
  std::chrono::nanoseconds queued{0};   // submit -> placed
  std::chrono::nanoseconds latency{0};  // submit -> complete (destination confirmed)
};

// A request as the decode side sees it once its data is in place.
struct KvArrival {
  std::string id;
  std::string peer;                // the prefill agent (the first one, for a gather)
  std::vector<std::string> peers;  // every prefill agent that sent a part, in arrival order
  std::uint64_t tokens = 0;
  std::vector<std::uint64_t> blocks;  // this pool's blocks, in token order
  std::uint64_t prefixBlocks = 0;     // leading blocks reused from the prefix cache
  std::vector<std::uint64_t> prefixHashes;
};

// A decode agent as a prefill agent sees it (or a prefill agent, on the decode side).
struct KvPeerStatus {
  std::string name;
  KvRole role = KvRole::kDecode;
  bool compatible = false;
  std::string reason;  // why not compatible
  std::uint64_t totalBlocks = 0;
  std::uint32_t kvHeads = 0;     // per rank, as its pool holds them
  std::uint64_t freeBlocks = 0;  // as last reported, minus placements since
  std::uint64_t inFlightBytes = 0;
  std::string dataPath;  // UCX transports in use
  // CPU this agent spent readying the peer's pool on the data path (keys unpacked; on
  // shared memory, its pages mapped into this process); 0 until this side first needed it.
  std::uint64_t readyCpuNs = 0;
};

}  // namespace kvx
#pragma GCC visibility pop
