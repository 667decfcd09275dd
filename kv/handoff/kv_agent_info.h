#pragma once

// KvAgentInfo: what a KV agent tells its peers about itself in its agent's metadata
// (AgentOptions::applicationInfo), so that the agent's own handshake is the KV handshake:
// its role, its default direction, and its pool (shape, layout, blocks and the names of
// the exposed regions holding its tensors, in tensor order). Fixed for the agent's
// lifetime; free blocks, which change, travel in capacity messages instead.
//
// As JSON text:
//   {"kv": {"version": 1, "role": "decode", "mode": "push", "shape": {...}, "layout": "nhd",
//           "blocks": 1024, "regions": ["kv.t0", "kv.t1", ...],
//           "process": {"pid": 4242, "host": "<boot id>/pid:<inode>"}}}
// ("process" is optional: an agent that does not send it cannot be watched, peer_process.h).
// Decoding checks every field (PROTOCOL_ERROR naming it); unknown fields are ignored, and a
// text without the "kv" object is an agent that is not a KV agent (NOT_FOUND). Stateless.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/pool/pool_description.h"
#include "kvx/agent.h"
#include "kvx/kv_types.h"
#include "kvx/process_watch.h"
#include "kvx/result.h"

namespace kvx::kv::handoff {

inline constexpr std::uint64_t kKvAgentInfoVersion = 1;

struct KvAgentInfo {
  KvRole role = KvRole::kPrefill;
  // The agent's default direction: tells the other side which pool it will address, so
  // that only the initiating side readies the other's memory when they join.
  KvMode mode = KvMode::kPush;
  ModelShape shape;
  KvLayout layout = KvLayout::kNHD;
  std::uint64_t blocks = 0;
  std::vector<std::string> regionNames;  // one per tensor of the layout
  ProcessIdentity process;               // the agent's process, where it said
};

std::string encodeKvAgentInfo(const KvAgentInfo& info);
Result<KvAgentInfo> decodeKvAgentInfo(std::string_view text);

// The peer's pool as this side addresses it: `info`'s regions looked up by name among the
// peer's exposed regions. FAILED_PRECONDITION naming a region the peer does not expose;
// PROTOCOL_ERROR for a description validateDescription refuses.
Result<PoolDescription> resolvePool(const KvAgentInfo& info, const PeerInfo& peer);

}  // namespace kvx::kv::handoff
