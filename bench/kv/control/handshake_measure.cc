#include "bench/kv/control/handshake_measure.h"

#include <fmt/format.h>

#include <thread>

#include "bench/kv/control/control_agents.h"
#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/sample_stats.h"
#include "kvx/kv_agent.h"

namespace kvx::bench {
namespace {

constexpr const char* kHandshakeGroup = "handshake";
constexpr auto kTimeout = std::chrono::seconds(10);

struct Contact {
  double ms = 0;
  double readyCpuMs = 0;
};

Result<Contact> firstContact(const std::string& transport, std::uint64_t blocks) {
  KVX_ASSIGN_OR_RETURN(
      auto decode, KvAgent::create(controlKvOptions("control-hs-decode", KvRole::kDecode, transport,
                                                    "llama3-8b", blocks, false)));
  KVX_ASSIGN_OR_RETURN(auto prefill,
                       KvAgent::create(controlKvOptions("control-hs-prefill", KvRole::kPrefill,
                                                        transport, "llama3-8b", blocks, false)));
  const auto started = Clock::now();
  const Deadline deadline = started + kTimeout;
  KVX_ASSIGN_OR_RETURN(std::string peer, prefill->connect(decode->listenAddress(), deadline));
  while (true) {
    for (const KvPeerStatus& p : prefill->peers()) {
      if (p.name == peer && p.compatible) {
        return Contact{msSince(started), static_cast<double>(p.readyCpuNs) / 1e6};
      }
    }
    if (Clock::now() >= deadline) {
      return timedOut("'" + peer + "' was not listed compatible within 10 s of connect()");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace

std::vector<ControlFigure> measureHandshake(const std::string& transport, std::uint32_t pairs,
                                            std::uint64_t poolBlocks) {
  const std::string pool = bytesLabel(poolBlocks * (2u << 20));
  const std::string latencyName = fmt::format("connect -> peer compatible ({} pools)", pool);
  std::vector<double> latencies, readyCpu;
  for (std::uint32_t i = 0; i < pairs; ++i) {
    auto contact = firstContact(transport, poolBlocks);
    if (!contact.isOk()) {
      return {failedFigure(kHandshakeGroup, latencyName, transport,
                           fmt::format("pair {}: {}", i, contact.status().toString()))};
    }
    latencies.push_back(contact->ms);
    readyCpu.push_back(contact->readyCpuMs);
  }
  const SampleStats latency = summarize(latencies);
  const SampleStats ready = summarize(readyCpu);
  const auto n = static_cast<std::uint32_t>(latency.count);
  return {measuredFigure(kHandshakeGroup, latencyName + ", p50", transport, latency.p50, "ms", n,
                         fmt::format("min {:.2f} ms; fresh agent pairs", latency.min)),
          measuredFigure(kHandshakeGroup, latencyName + ", max", transport, latency.max, "ms", n),
          measuredFigure(kHandshakeGroup, fmt::format("readying the peer's {} pool, CPU p50", pool),
                         transport, ready.p50, "ms", n,
                         fmt::format("max {:.2f} ms; KvPeerStatus::readyCpuNs", ready.max))};
}

}  // namespace kvx::bench
