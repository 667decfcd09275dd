#include "daemon/agent_daemon.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/logging.h"
#include "daemon/block_order.h"
#include "daemon/decode_loop.h"
#include "daemon/decode_report.h"
#include "daemon/peers.h"
#include "daemon/prefill_driver.h"
#include "daemon/prefill_report.h"
#include "daemon/protocol_output.h"
#include "daemon/workload_source.h"
#include "engine/gpu/gpu_runtime.h"
#include "process/agent_protocol.h"

namespace kvx::daemon {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(5);

void printLine(const std::string& line) { ProtocolOutput::writeLine(line); }

void printStats(nlohmann::json stats, const KvAgent& agent) {
  stats["name"] = agent.name();
  stats["role"] = std::string(toString(agent.role()));
  printLine(process::statsLine(stats.dump()));
}

// Where the pool lives and how its GPU memory moves, for the reports (what `kvx bench` shows
// in its header). The GPU runtime is the process's: a test double says so.
nlohmann::json memoryJson(const AgentConfig& config) {
  nlohmann::json memory = {{"kind", config.memory}};
  if (config.memory == "cuda") {
    memory["device"] = std::max(config.device, 0);
    memory["gpuPath"] = config.gpuPath;
    memory["gpuRuntime"] = engine::gpu::gpuRuntime().describe();
  }
  return memory;
}

std::string stopReason(const StopSignal& stop) { return "agent stopping on " + stop.reason(); }

void shutdown(KvAgent& agent, const std::string& reason) {
  Status s = agent.shutdown(deadlineIn(kShutdownGrace), reason);
  if (!s.isOk()) spdlog::warn("shutdown: {}", s.toString());
}

int runDecode(KvAgent& agent, const AgentConfig& config, const TpPlan& tp, StopSignal& stop) {
  DecodeLoop loop(agent, config.verify, workload::kPrefixChunkTokens, tp, !config.report.empty());
  const CpuTime cpuStart = processCpuTime();
  // The stop is awaited beside the loop, which serves arrivals until the agent has shut down:
  // requests that complete meanwhile are still served, so that none is left holding blocks.
  // The shutdown ends the loop's wait for an arrival at once (nextArrival: CANCELLED).
  std::atomic<bool> shutDown{false};
  std::int64_t readyCpuUs = 0;
  std::thread stopper([&] {
    while (!stop.waitFor(std::chrono::seconds(1))) {
      if (stop.takeGiveBackRequests() == 0) continue;
      // SIGUSR1: the operator gives back what lost prefill agents hold without proof.
      Result<std::uint64_t> given = agent.giveBackHeldBlocks("");
      if (given.isOk()) {
        spdlog::warn("SIGUSR1: {} held blocks given back; {} still held", *given,
                     agent.usage().heldBlocks);
      } else {
        spdlog::warn("SIGUSR1: {}", given.status().toString());
      }
    }
    readyCpuUs = peersReadyCpuUs(agent.usage());
    spdlog::info("{}: shutting down", stopReason(stop));
    shutdown(agent, stopReason(stop));
    shutDown = true;
  });
  loop.run([&shutDown] { return shutDown.load(); });
  stopper.join();
  loop.drain(deadlineIn(std::chrono::milliseconds(100)));
  if (Status s = agent.dropPrefixCache(); !s.isOk()) {
    spdlog::warn("dropPrefixCache: {}", s.toString());
  }
  const DecodeStats& d = loop.stats();
  bool reportWritten = true;
  if (!config.report.empty()) {
    nlohmann::json report =
        decodeReport(config.name, loop.arrivals(), cpuStart,
                     loop.cpuAfterLastArrival().value_or(processCpuTime()), readyCpuUs);
    report["memory"] = memoryJson(config);
    if (Status s = writeJsonFile(config.report, report); !s.isOk()) {
      spdlog::error("report: {}", s.toString());
      reportWritten = false;
    }
  }
  const KvPoolUsage usage = agent.usage();
  printStats({{"arrivals", d.arrivals},
              {"gathered", d.gathered},
              {"blocks", d.blocks},
              {"blocksVerified", d.blocksVerified},
              {"corruptBlocks", d.corruptBlocks},
              {"bytes", d.bytes},
              {"prefixBlocks", d.prefixBlocks},
              {"errors", d.errors},
              {"verify", config.verify},
              {"totalBlocks", usage.totalBlocks},
              {"freeBlocks", usage.freeBlocks},
              {"heldBlocks", usage.heldBlocks},
              {"lateWrites", usage.lateWrites}},
             agent);
  return reportWritten ? 0 : 1;
}

int replayWorkload(KvAgent& agent, const AgentConfig& config, const TpPlan& tp,
                   std::vector<std::string> decodeNames, StopSignal& stop,
                   std::vector<workload::TraceRecord> trace) {
  const WorkloadConfig& w = config.workload;
  ReplayOptions options;
  options.idPrefix = requestPrefixOf(config);
  options.mode = config.mode;
  options.layerwise = w.layerwise;
  options.layerMs = w.layerMs;
  options.timeScale = w.timeScale;
  options.maxOutstanding = w.maxOutstanding;
  options.requestTimeout = std::chrono::milliseconds(config.timeoutMs);
  options.tp = tp;
  options.decodeNames = std::move(decodeNames);
  options.blockOrder = parseBlockOrder(w.blockOrder).value_or(BlockOrder::kContiguous);
  options.seed = w.seed;
  options.fill = !w.noFill;
  spdlog::info("replaying {} prompts (mode {}, layer-wise {}, {} in flight at most{})",
               trace.size(), config.mode, w.layerwise, w.maxOutstanding,
               tp.sliced() ? fmt::format("; TP rank {} of {}: heads [{}, {}) of {}, to {} decode "
                                         "ranks",
                                         tp.rank, tp.size, tp.heads().first, tp.heads().end(),
                                         tp.totalHeads, tp.decodeSize)
                           : "");
  PrefillDriver driver(agent, options, std::move(trace));
  const ReplayResult result = driver.run(stop);
  const std::vector<KvPeerStatus> peers = agent.peers();
  shutdown(agent, result.stopped ? stopReason(stop) : "agent finished its workload");
  const KvPoolUsage usage = agent.usage();
  nlohmann::json report = replayReport(config.name, result, tp, peers, usage);
  report["memory"] = memoryJson(config);
  bool reportWritten = true;
  if (!config.report.empty()) {
    if (Status s = writeJsonFile(config.report, report); !s.isOk()) {
      spdlog::error("report: {}", s.toString());
      reportWritten = false;
    }
  }
  const nlohmann::json& totals = report["totals"];
  printStats({{"requests", totals["requests"]},
              {"released", totals["released"]},
              {"failed", totals["failed"]},
              {"stopped", totals["stoppedRequests"]},
              {"bytes", totals["bytes"]},
              {"wallSeconds", totals["wallSeconds"]},
              {"totalBlocks", usage.totalBlocks},
              {"freeBlocks", usage.freeBlocks}},
             agent);
  spdlog::info("workload done: {} of {} requests released", totals["released"].get<std::uint64_t>(),
               result.requests.size());
  return totals["failed"].get<std::uint64_t>() == 0 && reportWritten ? 0 : 1;
}

// A sliced replay pins each part to a decode rank: the peers must be the decode group's ranks,
// each holding its share of the heads.
Status checkDecodeRanks(const KvAgent& agent, const AgentConfig& config, const TpPlan& tp,
                        const std::vector<std::string>& names) {
  const std::vector<KvPeerStatus> peers = agent.peers();
  for (std::size_t q = 0; q < names.size(); ++q) {
    const auto it = std::find_if(peers.begin(), peers.end(),
                                 [&](const KvPeerStatus& p) { return p.name == names[q]; });
    const std::uint32_t expected = tp.headsOf(tp.decodeSize, static_cast<std::uint32_t>(q)).count;
    if (it != peers.end() && it->kvHeads != 0 && it->kvHeads != expected) {
      return invalidArgument(fmt::format(
          "decode rank {} ('{}' at {}) holds {} KV heads per block, but --decode-tp {} of a "
          "model with {} KV heads gives each rank {}: start it with --tp-size {} --tp-rank {}",
          q, names[q], config.peers[q], it->kvHeads, tp.decodeSize, tp.totalHeads, expected,
          tp.decodeSize, q));
    }
    for (std::size_t other = 0; other < q; ++other) {
      if (names[other] == names[q]) {
        return invalidArgument("--peer " + config.peers[other] + " and " + config.peers[q] +
                               " are the same agent '" + names[q] +
                               "'; give each decode rank's address once");
      }
    }
  }
  return Status::ok();
}

int runPrefill(KvAgent& agent, const AgentConfig& config, const TpPlan& tp, StopSignal& stop) {
  std::vector<workload::TraceRecord> trace;
  if (config.workload.given()) {
    auto loaded = loadWorkload(config.workload);
    if (!loaded.isOk()) {
      spdlog::error("workload: {}", loaded.status().toString());
      shutdown(agent, "agent could not load its workload");
      return 2;
    }
    trace = std::move(loaded).value();
  }
  auto connected = connectPeers(
      agent, config.peers, deadlineIn(std::chrono::milliseconds(config.connectTimeoutMs)), stop);
  Status ready = connected.status();
  if (ready.isOk() && tp.sliced()) ready = checkDecodeRanks(agent, config, tp, *connected);
  if (!ready.isOk()) {
    spdlog::error("{}", ready.toString());
    shutdown(agent, connected.isOk() ? "agent's decode ranks do not match --decode-tp"
                                     : "agent could not reach its peers");
    printStats({{"error", ready.toString()}}, agent);
    return 1;
  }
  PeerWatch peers(agent);
  peers.poll();
  if (config.workload.given()) {
    return replayWorkload(agent, config, tp, std::move(connected).value(), stop, std::move(trace));
  }

  while (!stop.waitFor(std::chrono::seconds(1))) peers.poll();
  spdlog::info("{}: shutting down", stopReason(stop));
  shutdown(agent, stopReason(stop));
  const KvPoolUsage usage = agent.usage();
  printStats({{"peers", agent.peers().size()},
              {"totalBlocks", usage.totalBlocks},
              {"freeBlocks", usage.freeBlocks}},
             agent);
  return 0;
}

}  // namespace

int runAgent(const AgentConfig& config, StopSignal& stop) {
  // From here on, stdout carries LISTENING and STATS only.
  ProtocolOutput::claim();
  if (!config.report.empty()) {
    if (Status s = prepareOutputFile(config.report, "--report"); !s.isOk()) {
      std::fprintf(stderr, "kvx agent: %s\n", s.message().c_str());
      return 2;
    }
  }
  // The library reads KVX_LOG_LEVEL once; --log-level (or a config file) then overrides it.
  kvx::agent::configureLogging();
  spdlog::set_level(spdlog::level::from_str(config.logLevel));
  auto options = toKvAgentOptions(config);
  auto tp = tpPlanOf(config);
  if (!options.isOk() || !tp.isOk()) {
    spdlog::error("{}", (options.isOk() ? tp.status() : options.status()).toString());
    return 2;
  }
  auto created = KvAgent::create(std::move(options).value());
  if (!created.isOk()) {
    Status s = created.status();
    if (s.code() == StatusCode::kResourceExhausted) {
      // The pool is what an agent allocates: say which option sizes it.
      s = Status(s.code(), s.message() + "; the pool has " + std::to_string(config.blocks) +
                               " blocks: lower --blocks, or free memory");
    }
    spdlog::error("cannot start the {} agent '{}': {}", config.role, config.name, s.toString());
    // On stdout too, so that a parent (kvx bench) can report the reason and its code.
    printLine(process::statsLine(nlohmann::json{
        {"name", config.name},
        {"role", config.role},
        {"error", s.toString()},
        {"code", std::string(toString(s.code()))},
        {"message", s.message()}}.dump()));
    return 1;
  }
  std::unique_ptr<KvAgent> agent = std::move(created).value();
  const KvPoolInfo& pool = agent->pool();
  spdlog::info(
      "{} agent '{}' listening on {}: pool {} x {} blocks ({} KiB each, {} layout, {:.2f} "
      "GiB), transport {}",
      config.role, config.name, agent->listenAddress(), pool.model, pool.blocks,
      pool.blockBytes >> 10, pool.layout,
      static_cast<double>(pool.blocks * pool.blockBytes) / (1u << 30), config.transport);
  if (pool.memory == MemoryKind::kCuda) {
    spdlog::info("pool in CUDA device {} memory, GPU path {}; GPU runtime: {}", pool.device,
                 config.gpuPath, engine::gpu::gpuRuntime().describe());
  }
  if (tp->size > 1) {
    spdlog::info("TP rank {} of {}: global KV heads [{}, {}) of {}", tp->rank, tp->size,
                 tp->heads().first, tp->heads().end(), tp->totalHeads);
  }
  printLine(process::listeningLine(agent->listenAddress()));
  return config.role == "decode" ? runDecode(*agent, config, *tp, stop)
                                 : runPrefill(*agent, config, *tp, stop);
}

}  // namespace kvx::daemon
