#pragma once

// The peer-death figures of the `control` scenario on one transport: a decode agent runs
// as a separate `kvx agent --role decode` process (llama3-8b, pages not populated); a
// prefill agent in this process connects to it and keeps `window` requests of `tokens`
// tokens live (PUSH, no content written; the decode pool holds twice that) for a warm-up,
// then, once one of them is TRANSFERRING, the decode process is killed with SIGKILL.
// Reported: the time from the kill until the prefill agent shows the first request that was
// placed at the peer as FAILED (KvAgent::status, polled every 0.2 ms), and until every such
// request has ended, with their status codes. Requests still queued for placement at the
// kill are counted and cancelled afterwards. When every placed request completed before the
// kill landed, it tries again (three times at most). Every wait has a deadline (the
// observation ends 30 s after the kill).
//
// Called by runControlScenario only.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

struct PeerDeathOptions {
  std::string kvxBinary;  // the `kvx` executable that runs the decode agent
  std::string logLevel = "warn";
  std::uint64_t tokens = 1024;
  std::uint32_t window = 4;
  std::chrono::milliseconds warmUp{1000};
};

std::vector<ControlFigure> measurePeerDeath(const std::string& transport,
                                            const PeerDeathOptions& options);

}  // namespace kvx::bench
