#pragma once

// AgentConfig: everything `kvx agent` is configured with. Each option comes from, in order of
// precedence: the command line (--blocks 1024), the environment (KVX_BLOCKS=1024; list
// options comma-separated: KVX_PEERS=127.0.0.1:7001,127.0.0.1:7002), a JSON config file
// (--config FILE or KVX_CONFIG; keys are the option names: {"blocks": 1024, "peers": [...]}),
// then the defaults below.
// Plain data and pure functions; safe from any thread.

#include <cstdint>
#include <string>
#include <vector>

#include "kv/pool/model_shape.h"
#include "kvx/kv_types.h"
#include "kvx/result.h"
#include "kvx/tp_plan.h"

namespace kvx::daemon {

// A prefill agent's workload and how it replays it.
struct WorkloadConfig {
  std::string trace;           // a JSONL trace file (Mooncake format)
  bool synthetic = false;      // or a generated trace:
  std::uint64_t requests = 0;  // synthetic: how many (0: 100); trace: the first N (0: all)
  std::uint64_t seed = 1;
  double rate = 50;  // synthetic arrivals per second (0: all at once)
  std::uint64_t minTokens = 128;
  std::uint64_t maxTokens = 4096;
  double prefixShare = 0.5;  // probability that a request starts with a shared prefix
  double timeScale = 1;      // replay speed: timestamps are divided by it
  // Trace: prompts longer than this are cut to it, their prefix hashes with them (0: kept
  // whole). Lets a trace with a few huge prompts replay into a pool that cannot hold them.
  std::uint64_t clipTokens = 0;
  std::uint64_t maxOutstanding = 32;
  std::string layerwise = "off";          // on | off | mixed
  double layerMs = 0;                     // simulated compute per layer
  std::string blockOrder = "contiguous";  // contiguous | random (daemon/block_order.h)
  bool noFill = false;                    // skip writing the content (no decode --verify)
  std::string requestPrefix;  // request ids "<prefix>-<index>"; empty: see requestPrefixOf

  bool given() const { return synthetic || !trace.empty(); }
};

struct AgentConfig {
  std::string role;  // prefill | decode (required)
  std::string name;  // unique among the agents (required)
  std::string listen = "127.0.0.1:0";
  std::string model = "llama3-8b";  // a built-in shape name or a JSON shape file
  std::string layout = "nhd";       // nhd | hnd | blocks-first | cross-layer
  std::uint64_t blocks = 0;         // pool size (required)
  bool noPopulate = false;          // leave the pool's pages to first use
  // Where the pool lives (KvPoolSpec::kind and device) and how its GPU memory moves
  // (AgentOptions::gpuPath): host | cuda; the CUDA device (-1: not given, 0 with cuda);
  // auto | direct | staged (cuda only).
  std::string memory = "host";
  int device = -1;
  std::string gpuPath = "auto";
  std::vector<std::string> peers;  // prefill: decode agents to connect to
  std::string transport = "shm";   // shm | tcp | socket
  // The data path's network devices (AgentOptions::ucxNetDevices); empty: its default, auto.
  std::string netDevices;
  // socket transport: auto | headers | authenticated | encrypted
  // (AgentOptions::dataProtection).
  std::string dataProtection = "auto";
  std::string mode = "push";  // push | pull | mixed (prefill workloads alternate)
  std::uint64_t leaseMs = 30000;
  std::uint64_t timeoutMs = 30000;
  std::uint64_t connectTimeoutMs = 30000;  // prefill: how long to retry --peer
  std::uint64_t prefixCacheBlocks = 0;
  std::uint64_t maxInflightBytes = 1ull << 30;
  std::uint64_t maxPushBlocksPerPeer = 0;  // decode: KvAgentOptions::maxPushBlocksPerPeer
  std::string logLevel = "info";
  // Control channel: the shared secret's file (else KVX_AUTH_TOKEN; kvx::AgentOptions),
  // whether a non-loopback --listen may go unauthenticated, and peer liveness.
  std::string authTokenFile;
  bool insecure = false;
  // TLS on the control channel: on when given, all three together (kvx::ControlTlsOptions).
  std::string tlsCert;
  std::string tlsKey;
  std::string tlsCa;
  std::uint64_t peerTimeoutMs = 2000;
  std::uint64_t heartbeatIntervalMs = 500;
  std::string configFile;
  bool printConfig = false;  // print the effective configuration and exit
  bool verify = false;       // decode: check every arrived block
  // Decode, host pools: check that nothing writes into a block while it is free
  // (KvAgentOptions::checkFreeBlocks).
  bool checkFreeBlocks = false;
  // Decode: how long the blocks of a lost prefill agent's PUSH stay out of the pool after its
  // data path closed (KvAgentOptions::lostPushHold).
  std::uint64_t lostPushHoldMs = 250;
  // Tensor parallelism (kvx/tp_plan.h): --model is the whole model; this agent's
  // pool holds rank tpRank's heads of a group of tpSize. Prefill: decodeTp decode ranks,
  // the --peer addresses in rank order.
  std::uint32_t tpSize = 1;
  std::uint32_t tpRank = 0;
  std::uint32_t decodeTp = 1;
  // Prefill: the replay report (daemon/prefill_report.h); decode: the arrivals report
  // (daemon/decode_report.h). Written when the agent stops.
  std::string report;
  WorkloadConfig workload;
};

// The checks `kvx agent` makes once its options are parsed (cli/agent_options.h): required
// options, role-specific options, ranges.
Status validateAgentConfig(const AgentConfig& config);

// The agent's options: --model read from its file when it names one, --transport mapped to
// the data path (selectDataPath); with --tp-size N > 1 the pool's shape is the model's with
// kvHeads / N.
// NOT_FOUND for a model file that cannot be read; INVALID_ARGUMENT for a model that is not a
// shape or TP sizes that do not split its heads (see tpPlanOf).
Result<KvAgentOptions> toKvAgentOptions(const AgentConfig& config);

// The shape --model names: a built-in one, or a JSON shape file. NOT_FOUND for a file that
// cannot be read, INVALID_ARGUMENT for text that is not a shape.
Result<kv::ModelShape> loadModelShape(const std::string& model);

// The agent's place in its TP group and, for a prefill agent, the decode group's size,
// checked against the model's KV heads (makeTpPlan). Errors as toKvAgentOptions.
Result<TpPlan> tpPlanOf(const AgentConfig& config);

// The prefix of the prefill agent's request ids: --request-prefix; else, when requests are
// sliced, "prompt" (every rank of a TP group must use the same ids so that their parts meet
// on the decode ranks); else the agent's --name.
std::string requestPrefixOf(const AgentConfig& config);

}  // namespace kvx::daemon
