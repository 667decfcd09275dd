#include "cli/bench_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <utility>

#include "bench/kv/scenarios.h"
#include "cli/agents_gpu_options.h"
#include "daemon/gpu_memory_options.h"
#include "daemon/prefill_report.h"

namespace kvx::cli {

void addBenchOptions(CLI::App& app, BenchOptions& o) {
  app.description(
      "Measures KV migration: real prefill and decode agent processes move a model's KV\n"
      "blocks for each case of a scenario, every destination block is verified, and a bare\n"
      "UCP loop (same transport, operation size, window) runs beside each case so that every\n"
      "kvx figure has its fraction of what the link does without kvx.");
  std::string names;
  for (const std::string& n : bench::scenarioNames()) names += " " + n;
  app.footer("\nScenarios:" + names +
             " control sweep all\n\nExamples:\n  kvx bench --scenario llama8b\n"
             "  kvx bench --scenario incast --transport tcp --json out.json\n"
             "  kvx bench --scenario trace --trace conversation_trace.jsonl\n"
             "  kvx bench --scenario sweep --segment-bytes 4096,65536 --segments 256 "
             "--window 1,8\n  kvx bench --scenario control   (control plane: registration, "
             "metadata,\n    handshake, descriptor CPU, abort, peer death)\n"
             "  kvx bench --scenario all --quick   (seconds per scenario)\n"
             "  kvx bench --scenario llama8b --memory cuda --gpu-path direct   (GPUDirect on;\n"
             "    --gpu-path staged: off)\n");
  app.add_option("--scenario", o.scenarios, "scenario name(s), 'sweep' or 'all'")
      ->required()
      ->delimiter(',');
  app.add_option("--transport", o.transport,
                 "shm, tcp (UCX), both, or socket (kvx's own TCP; bare reference: UCX tcp)")
      ->check(CLI::IsMember({"shm", "tcp", "both", "socket"}))
      ->capture_default_str();
  app.add_flag("--quick", o.quick, "tiny sizes: a smoke run of seconds per scenario");
  app.add_flag("--full", o.full, "the whole matrix of WORKLOADS.md where memory allows");
  app.add_flag("--no-verify", o.noVerify, "do not fill and check the blocks (pure transfer)");
  app.add_flag("--no-bare", o.noBare, "skip the bare UCP reference");
  app.add_option("--trace", o.trace, "JSONL trace for the 'trace' scenario");
  app.add_option("--layer-ms", o.layerMs, "'layerwise': simulated compute per layer")
      ->capture_default_str();
  app.add_option("--pool-budget-mib", o.poolBudgetMiB,
                 "memory per agent pool; caps requests in flight for big prompts")
      ->capture_default_str();
  app.add_option("--json", o.json, "write every figure as JSON to this file");
  app.add_option("--csv", o.csv,
                 "write one CSV row per case to this file (control: one per figure, in "
                 "FILE-control.csv when transfer cases ran too)");
  app.add_option("--plot", o.plot, "draw latency CDFs and GB/s vs op size (PNG, gnuplot)");
  app.add_option("--bare-binary", o.bareBinary, "the kvx-bare-ucp binary (default: beside kvx)");
  app.add_option("--log-level", o.logLevel, "the agents' log level")->capture_default_str();
  app.add_option("--timeout-s", o.timeoutSeconds, "deadline per case")->capture_default_str();
  app.add_option("--work-dir", o.workDir,
                 "keep the agents' reports and model files here (default: a temporary "
                 "directory, removed)");
  app.add_option("--segment-bytes", o.sweep.segmentBytes, "sweep: segment sizes")->delimiter(',');
  app.add_option("--segments", o.sweep.segments, "sweep: segments per request")->delimiter(',');
  app.add_option("--window", o.sweep.windows, "sweep: requests in flight")->delimiter(',');
  app.add_option("--sweep-mode", o.sweep.modes, "sweep: push and/or pull")->delimiter(',');
  app.add_option("--sweep-requests", o.sweep.requests,
                 "sweep: requests per case (default: about 1 GiB of data, 4 to 2000)");
  app.add_option("--sweep-order", o.sweep.order, "sweep: random or contiguous source blocks")
      ->check(CLI::IsMember({"random", "contiguous"}));
  addAgentsGpuMemoryOptions(app, o.memory, o.device, o.gpuPath,
                            "where the agents' pools live: host, or cuda (GPU memory; the bare "
                            "reference still moves host memory)");
  app.add_option("--control-step", o.controlStep, "internal: one step of 'control'")->group("");
}

Status validateBenchOptions(const BenchOptions& o) {
  KVX_RETURN_IF_ERROR(
      daemon::validateGpuMemoryOptions(o.memory, o.device, o.gpuPath, "this run's pools are"));
  // Output files are tried before the run, not found unwritable after minutes of it.
  for (const auto& [path, option] : {std::pair{o.json, "--json"}, std::pair{o.csv, "--csv"}}) {
    if (!path.empty()) KVX_RETURN_IF_ERROR(daemon::prepareOutputFile(path, option));
  }
  return Status::ok();
}

int runBenchCommand(const BenchOptions& o, const std::string& commandLine,
                    daemon::StopSignal& stop) {
  if (o.controlStep.empty()) {
    if (Status s = validateBenchOptions(o); !s.isOk()) {
      std::fprintf(stderr, "kvx bench: %s\n", s.message().c_str());
      return 2;
    }
  }
  return bench::runBench(o, commandLine, [&stop] { return stop.requested(); });
}

}  // namespace kvx::cli
