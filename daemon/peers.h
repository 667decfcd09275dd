#pragma once

// How `kvx agent` meets its peers: a prefill agent connects to every --peer, retrying until a
// deadline because decode agents may start a little later; any agent logs peers as they come
// and go, with the data path UCX chose for each.

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "daemon/signals.h"
#include "kvx/kv_agent.h"

namespace kvx::daemon {

// Connects to each address in turn, retrying each until `deadline` (or a stop), and returns
// the peers' agent names in the order of `addresses`. The first address that cannot be
// reached fails the call with the last error; one that is not an address (INVALID_ARGUMENT)
// fails it at once.
Result<std::vector<std::string>> connectPeers(KvAgent& agent,
                                              const std::vector<std::string>& addresses,
                                              Deadline deadline, const StopSignal& stop);

// Logs peers that appeared or left since the last poll(). One owner thread.
class PeerWatch {
 public:
  explicit PeerWatch(const KvAgent& agent) : agent_(agent) {}
  // Cheap enough to call every second.
  void poll();

 private:
  const KvAgent& agent_;
  std::set<std::string> known_;
};

}  // namespace kvx::daemon
