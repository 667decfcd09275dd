#include "cli/agent_command.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/logging.h"
#include "cli/decode_loop.h"
#include "cli/peers.h"
#include "cli/prefill_driver.h"
#include "cli/prefill_report.h"
#include "cli/workload_source.h"

namespace kvx::cli {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(5);

void printLine(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void printStats(nlohmann::json stats, const KvAgent& agent) {
  stats["name"] = agent.name();
  stats["role"] = std::string(toString(agent.role()));
  printLine("STATS " + stats.dump());
}

std::string stopReason(const StopSignal& stop) { return "agent stopping on " + stop.reason(); }

void shutdown(KvAgent& agent, const std::string& reason) {
  Status s = agent.shutdown(deadlineIn(kShutdownGrace), reason);
  if (!s.isOk()) spdlog::warn("shutdown: {}", s.toString());
}

int runDecode(KvAgent& agent, const AgentConfig& config, StopSignal& stop) {
  DecodeLoop loop(agent, config.verify, workload::kPrefixChunkTokens);
  loop.run([&stop] { return stop.requested(); });
  spdlog::info("{}: shutting down", stopReason(stop));
  // Requests that complete while the agent shuts down are still served, so that none is left
  // holding blocks.
  std::atomic<bool> shutDown{false};
  std::thread stopper([&] {
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
  const KvPoolUsage usage = agent.usage();
  printStats({{"arrivals", d.arrivals},
              {"blocks", d.blocks},
              {"blocksVerified", d.blocksVerified},
              {"corruptBlocks", d.corruptBlocks},
              {"bytes", d.bytes},
              {"prefixBlocks", d.prefixBlocks},
              {"errors", d.errors},
              {"verify", config.verify},
              {"totalBlocks", usage.totalBlocks},
              {"freeBlocks", usage.freeBlocks}},
             agent);
  return 0;
}

int replayWorkload(KvAgent& agent, const AgentConfig& config, StopSignal& stop,
                   std::vector<workload::TraceRecord> trace) {
  const WorkloadConfig& w = config.workload;
  ReplayOptions options;
  options.idPrefix = config.name;
  options.mode = config.mode;
  options.layerwise = w.layerwise;
  options.layerMs = w.layerMs;
  options.timeScale = w.timeScale;
  options.maxOutstanding = w.maxOutstanding;
  options.requestTimeout = std::chrono::milliseconds(config.timeoutMs);
  spdlog::info("replaying {} requests (mode {}, layer-wise {}, {} in flight at most)", trace.size(),
               config.mode, w.layerwise, w.maxOutstanding);
  PrefillDriver driver(agent, options, std::move(trace));
  const ReplayResult result = driver.run(stop);
  const std::vector<KvPeerStatus> peers = agent.peers();
  shutdown(agent, result.stopped ? stopReason(stop) : "agent finished its workload");
  const KvPoolUsage usage = agent.usage();
  const nlohmann::json report = replayReport(config.name, result, peers, usage);
  if (!w.report.empty()) {
    if (Status s = writeJsonFile(w.report, report); !s.isOk()) {
      spdlog::error("report: {}", s.toString());
    }
  }
  const nlohmann::json& totals = report["totals"];
  printStats({{"requests", totals["requests"]},
              {"released", totals["released"]},
              {"failed", totals["failed"]},
              {"bytes", totals["bytes"]},
              {"wallSeconds", totals["wallSeconds"]},
              {"totalBlocks", usage.totalBlocks},
              {"freeBlocks", usage.freeBlocks}},
             agent);
  spdlog::info("workload done: {} of {} requests released", totals["released"].get<std::uint64_t>(),
               result.requests.size());
  return totals["failed"].get<std::uint64_t>() == 0 ? 0 : 1;
}

int runPrefill(KvAgent& agent, const AgentConfig& config, StopSignal& stop) {
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
  Status connected = connectPeers(
      agent, config.peers, deadlineIn(std::chrono::milliseconds(config.connectTimeoutMs)), stop);
  if (!connected.isOk()) {
    spdlog::error("{}", connected.toString());
    shutdown(agent, "agent could not reach its peers");
    printStats({{"error", connected.toString()}}, agent);
    return 1;
  }
  PeerWatch peers(agent);
  peers.poll();
  if (config.workload.given()) return replayWorkload(agent, config, stop, std::move(trace));

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

int runAgentCommand(CLI::App& app, AgentConfig& config, StopSignal& stop) {
  if (Status s = finishAgentConfig(app, config); !s.isOk()) {
    std::fprintf(stderr, "kvx agent: %s\nRun 'kvx agent --help' for the options.\n",
                 s.message().c_str());
    return 2;
  }
  if (config.printConfig) {
    std::fputs(configJson(app).c_str(), stdout);
    return 0;
  }
  // The library reads KVX_LOG_LEVEL once; --log-level (or a config file) then overrides it.
  kvx::agent::configureLogging();
  spdlog::set_level(spdlog::level::from_str(config.logLevel));
  auto options = toKvAgentOptions(config);
  if (!options.isOk()) {
    spdlog::error("{}", options.status().toString());
    return 2;
  }
  auto created = KvAgent::create(std::move(options).value());
  if (!created.isOk()) {
    spdlog::error("cannot start the {} agent '{}': {}", config.role, config.name,
                  created.status().toString());
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
  printLine("LISTENING " + agent->listenAddress());
  return config.role == "decode" ? runDecode(*agent, config, stop)
                                 : runPrefill(*agent, config, stop);
}

}  // namespace kvx::cli
