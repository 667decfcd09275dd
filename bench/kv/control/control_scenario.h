#pragma once

// The `control` scenario of `kvx bench` (WORKLOADS.md): the control plane's costs, which
// the transfer scenarios do not isolate. Its steps (bench/kv/control/control_step.h):
//   registration  Agent start; allocateMemory of a large pool (pages populated or not);
//                 registerMemory of memory the caller owns
//   metadata      the size of a KV agent's metadata blob (32 and 64 per-layer regions)
//   handshake     KvAgent::connect until the peer is listed compatible, fresh pairs, and
//                 the one-time CPU of readying the peer's pool (KvPeerStatus::readyCpuNs)
//   descriptors   thread CPU per descriptor of prepareLocalList / prepareRemoteList and of
//                 makeTransfer + post for a 16,384-descriptor request that cannot coalesce
//   fixed-overhead  one small block + notification, and a notification alone, one at a time:
//                 post -> the target's handler, against the bare put + flush + AM
//   abort-*       cancel of a large in-flight transfer (Agent) and request (KvAgent): how
//                 long until its end is reported, and that it ended CANCELLED
//   peer-death    a decode agent process is SIGKILLed with requests in flight from a
//                 prefill agent: how long until they fail, and with what code
//
// Each step runs in a process of its own (`kvx bench --scenario control --control-step
// STEP`), with its agents inside that process (real UCX over shm or tcp) and, for peer
// death, the decode agent in one more process. A fresh process per step keeps one step's
// UCX and memory state out of the next's figures, and a step that crashes (UCX 1.13 has
// aborted in endpoint teardown after a cancel here) is reported as failed instead of taking
// the run down. Every wait has a deadline; a figure that cannot be measured says why.
//
// One owner thread; runControlScenario blocks for the length of the run (seconds with
// --quick, about a minute per transport otherwise).

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/kv/control/control_figure.h"

namespace kvx::bench {

// How big each measurement is: small for --quick, a realistic pool otherwise.
struct ControlSizes {
  std::vector<std::uint64_t> poolBytes;           // registration: allocated / registered pool sizes
  std::uint32_t handshakePairs = 0;               // fresh agent pairs
  std::uint64_t handshakePoolBlocks = 0;          // llama3-8b blocks (2 MiB each) per agent
  std::uint32_t descriptors = 16384;              // per request, as the WORKLOADS.md target says
  std::vector<std::uint64_t> descriptorBytes;     // segment sizes tried
  std::uint32_t descriptorRepeats = 0;            // requests per size (the median is reported)
  std::uint64_t abortBytes = 0;                   // size of the cancelled transfer / request
  std::uint64_t deathRequestTokens = 0;           // llama3-8b tokens per request
  std::uint32_t deathWindow = 0;                  // requests kept in flight before the kill
  std::vector<std::uint64_t> fixedOverheadBytes;  // fixed overhead: one block of each size
  std::uint32_t fixedOverheadRepeats = 0;         // measured transfers per size (+ a tenth warmup)
};

ControlSizes controlSizes(bool quick);

struct ControlOptions {
  std::vector<std::string> transports = {"shm"};  // "shm" and/or "tcp"
  bool quick = false;
  std::string kvxBinary;   // the `kvx` executable: runs each step, and the killed agent
  std::string bareBinary;  // kvx-bare-ucp, the fixed overhead's reference; empty: none
  // The agents' log level. In a step's process the default "warn" becomes "error", so that
  // the warnings that cancels and the killed peer cause on purpose do not clutter the run.
  std::string logLevel = "warn";
  bool progress = true;                   // one line per step on stderr
  std::chrono::seconds stepTimeout{300};  // a step's process is killed after this
};

// Runs every step for every transport, each in its own process. `stopRequested` is polled
// between steps; steps skipped are listed as not measured.
ControlReport runControlScenario(const ControlOptions& options,
                                 const std::function<bool()>& stopRequested);

}  // namespace kvx::bench
