#pragma once

// BenchCase: one measured configuration of `kvx bench`: what the agent processes run (model,
// layout, transport, PUSH or PULL, prompt size, requests in flight, block order, layer-wise
// compute, tensor-parallel sizes, how many prefill and decode agents, host or GPU memory) and what
// the bare UCP reference beside it runs. Scenarios (scenarios.h) expand into lists of cases. Plain
// data.

#include <cstdint>
#include <string>

namespace kvx::bench {

struct BenchCase {
  std::string scenario;  // "llama8b"
  std::string label;     // "4k w8 push random": unique within its scenario

  // The agents.
  std::string model = "llama3-8b";  // a built-in name or a JSON shape
  std::string layout = "nhd";
  std::string transport = "shm";
  std::string mode = "push";    // push | pull
  std::uint64_t tokens = 4096;  // per prompt; for a trace, the longest its pools are sized for
  std::uint64_t requests = 8;
  std::uint64_t window = 1;               // requests in flight per prefill agent
  std::string blockOrder = "contiguous";  // contiguous | random (source blocks shuffled)
  bool layerwise = false;
  double layerMs = 0;  // simulated prefill compute per layer
  std::uint32_t prefillTp = 1;
  std::uint32_t decodeTp = 1;
  std::uint32_t prefills = 1;  // incast: several prefill agents
  std::uint32_t decodes = 1;
  std::string trace;  // replay this trace instead of fixed-size prompts
  double timeScale = 1;
  double prefixShare = 0;
  std::uint64_t prefixCacheBlocks = 0;
  bool verify = true;
  // Each agent's pool holds at most this many bytes (0: no bound), and at least one request.
  std::uint64_t poolBudgetBytes = 0;
  // Populate the pools' pages at start-up, as a deployment does (every scenario; a pool is
  // bounded by poolBudgetBytes, so two populated pools fit in this machine's memory).
  bool populate = true;
  // A smoke run (`--quick`): its figures do not count, so the bare reference's buffer holds
  // what it moves instead of at least 256 MiB (whose fill and checksum were most of a quick
  // case's time).
  bool smoke = false;
  // Where every agent's pool lives: "host", or "cuda" (device `device`), and how its GPU
  // memory moves: "auto", "direct" (GPUDirect) or "staged" (through host buffers).
  std::string memory = "host";
  int device = 0;
  std::string gpuPath = "auto";

  // The bare reference: run it beside this case (false for cases whose figure is a latency
  // distribution under load rather than a bandwidth: trace replays).
  bool bareReference = true;
  // One request at a time, for its latency: the bare loop then runs in its fixed-overhead
  // mode (the next request once the target acknowledged the previous), and the output sets
  // kvx's notify p50 beside the bare receiver's.
  bool fixedOverhead = false;
};

}  // namespace kvx::bench
