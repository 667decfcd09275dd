#pragma once

// PeerWriter: what a decode agent learns at a prefill agent's join about how that agent's
// writes reach this agent's pool: what it needs, once the agent is lost, to know when no byte
// of its writes can land any more.
//   - Where this agent's side places every byte (UCX over tcp or RDMA, kvx's socket
//     transport), closing the link stops them: the engine closes a lost peer's data path
//     before it reports the peer gone.
//   - Where the peer's own process copies into this agent's memory (UCX over shared memory
//     or cross-memory attach, CUDA IPC), closing the link does not stop a copy it is in the
//     middle of, nor the rest of a post a stopped process resumes: only the peer can say it
//     stopped writing (it answers an abort once its moves have drained), or its process ends.
//
// Plain data; copied into the records of the requests it may still write into.

#include <cstdint>
#include <functional>
#include <string>

namespace kvx::kv::handoff {

struct PeerWriter {
  std::uint64_t incarnation = 0;  // the agent's, from its join
  // The peer's process writes into this agent's memory by itself (see above).
  bool writesDirectly = false;
  // True once the peer's process has ended; empty where this agent cannot tell (another
  // host or pid namespace, an agent that did not say which process it is).
  std::function<bool()> processEnded;
  std::string process;  // for logs: "pid 4242", or why it cannot be watched
};

}  // namespace kvx::kv::handoff
