#include "cli/bench_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "bench/kv/bench_output.h"
#include "bench/kv/bench_plot.h"
#include "bench/kv/bench_session.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/control_scenario.h"
#include "bench/kv/control/control_step.h"
#include "bench/kv/run_header.h"
#include "cli/agents_gpu_options.h"
#include "daemon/gpu_memory_options.h"

namespace kvx::cli {
namespace {

std::string selfPath() {
  std::error_code error;
  auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "kvx" : path.string();
}

// kvx-bare-ucp next to this binary (an install), in ../bench/ (the build tree), or on PATH.
std::string findBareBinary(const std::string& given) {
  if (!given.empty()) return given;
  const std::filesystem::path self = selfPath();
  for (const auto& candidate : {self.parent_path() / "kvx-bare-ucp",
                                self.parent_path().parent_path() / "bench" / "kvx-bare-ucp"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "kvx-bare-ucp";
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  return static_cast<bool>(file);
}

// Where the control scenario's CSV rows go: FILE itself when no transfer case ran (its
// columns differ from theirs), FILE with "-control" before the extension otherwise.
std::string controlCsvPath(const std::string& csv, bool transferCases) {
  if (!transferCases) return csv;
  const std::filesystem::path path(csv);
  return (path.parent_path() / (path.stem().string() + "-control" + path.extension().string()))
      .string();
}

// `--control-step STEP`: the figures of one step of `control`, as one JSON line on stdout.
int runControlStep(const BenchOptions& o) {
  bench::ControlOptions options;
  options.quick = o.quick;
  options.kvxBinary = selfPath();
  options.bareBinary = o.noBare ? "" : findBareBinary(o.bareBinary);
  options.logLevel = o.logLevel;
  if (o.transport == "both") {
    std::fprintf(stderr, "kvx bench: --control-step runs over one transport, not 'both'\n");
    return 2;
  }
  auto figures = bench::runControlStep(o.controlStep, o.transport, options);
  if (!figures.isOk()) {
    std::fprintf(stderr, "kvx bench: %s\n", figures.status().toString().c_str());
    return 2;
  }
  bench::ControlReport report;
  report.figures = std::move(figures).value();
  std::printf("%s\n", bench::controlToJson(report).dump().c_str());
  return 0;
}

}  // namespace

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
  return daemon::validateGpuMemoryOptions(o.memory, o.device, o.gpuPath, "this run's pools are");
}

int runBenchCommand(const BenchOptions& o, const std::string& commandLine,
                    daemon::StopSignal& stop) {
  if (!o.controlStep.empty()) return runControlStep(o);
  if (Status s = validateBenchOptions(o); !s.isOk()) {
    std::fprintf(stderr, "kvx bench: %s\n", s.message().c_str());
    return 2;
  }
  const bench::MemorySetting memory{o.memory, std::max(o.device, 0), o.gpuPath};
  bench::ScenarioOptions scenarioOptions;
  scenarioOptions.transports = o.transport == "both" ? std::vector<std::string>{"shm", "tcp"}
                                                     : std::vector<std::string>{o.transport};
  scenarioOptions.size = o.quick  ? bench::ScenarioSize::kQuick
                         : o.full ? bench::ScenarioSize::kFull
                                  : bench::ScenarioSize::kDefault;
  scenarioOptions.trace = o.trace;
  scenarioOptions.layerMs = o.layerMs;
  scenarioOptions.poolBudgetMiB = o.poolBudgetMiB;
  scenarioOptions.verify = !o.noVerify;
  std::vector<std::string> names;
  bool control = false;  // not a transfer scenario: it runs after the cases, on its own
  for (const std::string& name : o.scenarios) {
    if (name == "control" || name == "all") control = true;
    if (name == "control") continue;
    if (name != "all") {
      names.push_back(name);
      continue;
    }
    for (const std::string& n : bench::scenarioNames()) {
      if (n != "trace" || !o.trace.empty()) names.push_back(n);
    }
  }
  std::vector<bench::BenchCase> cases;
  for (const std::string& name : names) {
    Result<std::vector<bench::BenchCase>> expanded =
        name == "sweep" ? bench::sweepCases(o.sweep) : bench::scenarioCases(name, scenarioOptions);
    if (!expanded.isOk()) {
      std::fprintf(stderr, "kvx bench: %s\n", expanded.status().toString().c_str());
      return 2;
    }
    for (bench::BenchCase& c : *expanded) {
      c.memory = memory.kind;
      c.device = memory.device;
      c.gpuPath = memory.gpuPath;
      if (name == "sweep") {
        for (const std::string& transport : scenarioOptions.transports) {
          bench::BenchCase t = c;
          t.transport = transport;
          t.verify = !o.noVerify;
          cases.push_back(std::move(t));
        }
      } else {
        cases.push_back(std::move(c));
      }
    }
  }
  char dirTemplate[] = "/tmp/kvx-bench-XXXXXX";
  std::string workDir = o.workDir;
  if (workDir.empty()) {
    if (::mkdtemp(dirTemplate) == nullptr) {
      std::fprintf(stderr, "kvx bench: cannot create a directory in /tmp\n");
      return 1;
    }
    workDir = dirTemplate;
  } else if (std::error_code made; !std::filesystem::create_directories(workDir, made) && made) {
    std::fprintf(stderr, "kvx bench: --work-dir %s: %s\n", workDir.c_str(), made.message().c_str());
    return 1;
  }
  bench::SessionOptions session;
  session.runner = {selfPath(), workDir, o.logLevel, std::chrono::seconds(o.timeoutSeconds)};
  session.bareBinary = o.noBare ? "" : findBareBinary(o.bareBinary);
  std::vector<std::string> allNames = names;
  if (control) allNames.push_back("control");
  bench::RunHeader header =
      bench::describeRun(scenarioOptions.transports, allNames, commandLine, memory);
  for (const std::string& line : header.lines) std::fprintf(stderr, "%s\n", line.c_str());
  const auto outcomes =
      cases.empty() ? std::vector<bench::CaseOutcome>{}
                    : bench::BenchSession(session).run(cases, [&stop] { return stop.requested(); });
  // The data path the agents reported replaces what was expected before they ran.
  bench::addLivePath(header, outcomes, memory);
  if (o.workDir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(workDir, ignored);
  }
  std::optional<bench::ControlReport> controlReport;
  if (control && !stop.requested()) {
    bench::ControlOptions controlOptions;
    controlOptions.transports = scenarioOptions.transports;
    controlOptions.quick = o.quick;
    controlOptions.kvxBinary = selfPath();
    controlOptions.bareBinary = session.bareBinary;
    controlOptions.logLevel = o.logLevel;
    controlReport = bench::runControlScenario(controlOptions, [&stop] { return stop.requested(); });
  }

  if (cases.empty()) {
    for (const std::string& line : header.lines) std::fprintf(stdout, "%s\n", line.c_str());
  } else {
    std::fputs(bench::renderTable(header, outcomes, !o.noVerify).c_str(), stdout);
  }
  if (controlReport) std::fputs(bench::renderControlTable(*controlReport).c_str(), stdout);
  std::fflush(stdout);
  int code = 0;
  nlohmann::json document = bench::toJson(header, outcomes);
  if (controlReport) document["control"] = bench::controlToJson(*controlReport);
  if (!o.json.empty() && !writeFile(o.json, document.dump(2) + "\n")) {
    std::fprintf(stderr, "kvx bench: cannot write --json %s\n", o.json.c_str());
    code = 1;
  }
  if (!o.csv.empty() && !cases.empty() && !writeFile(o.csv, bench::toCsv(outcomes))) {
    std::fprintf(stderr, "kvx bench: cannot write --csv %s\n", o.csv.c_str());
    code = 1;
  }
  if (!o.csv.empty() && controlReport) {
    const std::string path = controlCsvPath(o.csv, !cases.empty());
    if (!writeFile(path, bench::controlToCsv(*controlReport))) {
      std::fprintf(stderr, "kvx bench: cannot write the control CSV %s\n", path.c_str());
      code = 1;
    } else if (path != o.csv) {
      std::fprintf(stderr, "kvx bench: the control scenario's CSV rows are in %s\n", path.c_str());
    }
  }
  if (controlReport && controlReport->failed()) code = 1;
  if (!o.plot.empty() && cases.empty()) {
    std::fprintf(stderr, "kvx bench: --plot draws transfer cases; this run had none\n");
  } else if (!o.plot.empty()) {
    Status plotted = bench::writePlot(outcomes, o.plot);
    if (!plotted.isOk()) {
      std::fprintf(stderr, "kvx bench: --plot: %s\n", plotted.toString().c_str());
      code = 1;
    }
  }
  for (const bench::CaseOutcome& outcome : outcomes) {
    if (!outcome.clean()) code = 1;
  }
  if (outcomes.size() < cases.size()) code = 1;  // stopped
  if (control && (!controlReport || stop.requested())) code = 1;
  return code;
}

}  // namespace kvx::cli
