#include "bench/kv/control/control_agents.h"

#include <unistd.h>

#include <atomic>
#include <thread>

namespace kvx::bench {

std::string uniqueAgentName(const std::string& base) {
  static std::atomic<std::uint64_t> counter{0};
  return base + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

AgentOptions controlAgentOptions(const std::string& base, const std::string& transport) {
  AgentOptions options;
  options.name = uniqueAgentName(base);
  options.listenAddress = "127.0.0.1:0";
  selectDataPath(options, transport);  // the bench's --transport allows only known names
  return options;
}

KvAgentOptions controlKvOptions(const std::string& base, KvRole role, const std::string& transport,
                                const std::string& model, std::uint64_t blocks, bool populate) {
  KvAgentOptions options;
  options.agent = controlAgentOptions(base, transport);
  options.role = role;
  options.pool.model = model;
  options.pool.layout = "nhd";
  options.pool.blocks = blocks;
  options.pool.populate = populate;
  options.requestTimeout = std::chrono::seconds(30);
  options.leaseTimeout = std::chrono::seconds(30);
  options.maxInFlightBytesPerPeer = 64ull << 30;
  return options;
}

Status awaitPeerRegion(Agent& agent, const std::string& peer, RegionId region, Deadline deadline) {
  while (true) {
    auto info = agent.peerInfo(peer);
    if (info.isOk()) {
      for (const RegionInfo& r : info->regions) {
        if (r.id == region) return Status::ok();
      }
    }
    if (Clock::now() >= deadline) {
      return timedOut("peer '" + peer + "' did not announce its region " +
                      std::to_string(region.value) + " in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace kvx::bench
