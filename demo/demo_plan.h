#pragma once

// DemoPlan: the agent processes `kvx demo` starts, with their arguments and pool sizes.
//   - Without tensor parallelism (--prefill-tp 1 --decode-tp 1): two decode agents and one
//     prefill agent; the scheduler places each whole request.
//   - With it: one decode instance of D ranks (decode-0..D-1, --tp-size D --tp-rank q) and
//     one prefill instance of P ranks (prefill-0..P-1, --tp-size P --tp-rank r --decode-tp D)
//     that all replay the same workload. Pools are per rank: decode 2048 blocks (the bytes
//     of two TP1 decode pools over the D ranks), prefill 1024 blocks times the requests a
//     rank sends per prompt (each has its own source blocks), at most 4 GiB a rank.
//     With gathers (P > D) the synthetic rate defaults to 5 prompts a second, which the data
//     path keeps up with here: when decode pools fill up, a gather's later parts wait for
//     room that they do not need (docs/kv.md, "Tensor-parallel slicing"), and at 100 a
//     second the replay stalls until requests time out.
// Plain data and a pure function.

#include <cstdint>
#include <string>
#include <vector>

#include "kvx/result.h"

namespace kvx::demo {

struct DemoOptions {
  std::uint64_t requests = 200;
  std::uint64_t seed = 1;
  std::string model = "llama3-8b";
  std::string layout = "nhd";
  std::string transport = "shm";
  std::string mode = "mixed";
  std::string layerwise = "mixed";
  std::string trace;
  double timeScale = 1;
  double rate = -1;  // synthetic arrivals per second; -1: 100, or 5 for gathers (see below)
  std::uint64_t minTokens = 128;
  std::uint64_t maxTokens = 4096;
  double prefixShare = 0.5;
  double layerMs = 0;
  std::uint64_t maxOutstanding = 32;
  std::uint32_t prefillTp = 1;
  std::uint32_t decodeTp = 1;
  std::uint64_t decodeBlocks = 0;   // per agent; 0: 1024, or 2048 per rank with TP
  std::uint64_t prefillBlocks = 0;  // per agent; 0: 1024, more per rank for scatters
  std::uint64_t prefixCacheBlocks = 256;
  std::uint64_t timeoutSeconds = 300;
  std::string logLevel = "warn";
  std::string json;
  // Where every agent's pool lives and how its GPU memory moves (daemon/gpu_memory_options.h).
  std::string memory = "host";
  int device = -1;
  std::string gpuPath = "auto";
};

struct DemoAgent {
  std::string name;
  std::vector<std::string> args;  // `kvx ARGS`: "agent", "--role", ...
};

struct DemoPlan {
  std::uint32_t prefillTp = 1;
  std::uint32_t decodeTp = 1;
  double rate = 100;
  std::uint64_t decodeBlocks = 0;  // per agent
  std::uint64_t prefillBlocks = 0;
  std::vector<DemoAgent> decodes;   // started first, in rank order
  std::vector<DemoAgent> prefills;  // each then gets --report FILE and the decodes' --peer
  std::string title;                // one line: what runs

  bool tensorParallel() const { return prefillTp > 1 || decodeTp > 1; }
};

// INVALID_ARGUMENT when the model cannot be read or the TP sizes do not split its KV heads.
Result<DemoPlan> planDemo(const DemoOptions& options);

}  // namespace kvx::demo
