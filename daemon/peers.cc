#include "daemon/peers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace kvx::daemon {
namespace {

void logPeer(const KvPeerStatus& peer) {
  spdlog::info("peer {} ({}) connected: data path {}, {} blocks ({} free){}", peer.name,
               toString(peer.role), peer.dataPath.empty() ? "not reported" : peer.dataPath,
               peer.totalBlocks, peer.freeBlocks,
               peer.compatible ? "" : ", INCOMPATIBLE: " + peer.reason);
}

}  // namespace

Result<std::vector<std::string>> connectPeers(KvAgent& agent,
                                              const std::vector<std::string>& addresses,
                                              Deadline deadline, const StopSignal& stop) {
  std::vector<std::string> names;
  for (const std::string& address : addresses) {
    int attempts = 0;
    while (true) {
      ++attempts;
      // A refused connection fails fast; a silent host must not use up the whole deadline.
      const Deadline attempt = std::min(deadline, Clock::now() + std::chrono::seconds(5));
      auto name = agent.connect(address, attempt);
      if (name.isOk()) {
        spdlog::info("connected to {} ({}) after {} attempt(s)", address, *name, attempts);
        names.push_back(*name);
        break;
      }
      if (stop.requested()) return cancelled("stopped while connecting to " + address);
      if (name.status().code() == StatusCode::kInvalidArgument) {
        // Not an address: no retry makes it one.
        return name.status().withContext("--peer '" + address + "'");
      }
      if (Clock::now() + std::chrono::milliseconds(200) >= deadline) {
        return name.status().withContext("connecting to decode agent " + address + " (" +
                                         std::to_string(attempts) +
                                         " attempts; is it running? see --connect-timeout-ms)");
      }
      spdlog::debug("connecting to {} failed ({}); retrying", address, name.status().toString());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  return names;
}

void PeerWatch::poll() {
  std::set<std::string> now;
  for (const KvPeerStatus& peer : agent_.peers()) {
    now.insert(peer.name);
    if (!known_.contains(peer.name)) logPeer(peer);
  }
  for (const std::string& name : known_) {
    if (!now.contains(name)) spdlog::info("peer {} left", name);
  }
  known_ = std::move(now);
}

}  // namespace kvx::daemon
