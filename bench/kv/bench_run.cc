#include "bench/kv/bench_run.h"

#include <unistd.h>

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
#include "bench/kv/scenarios.h"

namespace kvx::bench {
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
  ControlOptions options;
  options.quick = o.quick;
  options.kvxBinary = selfPath();
  options.bareBinary = o.noBare ? "" : findBareBinary(o.bareBinary);
  options.logLevel = o.logLevel;
  if (o.transport == "both") {
    std::fprintf(stderr, "kvx bench: --control-step runs over one transport, not 'both'\n");
    return 2;
  }
  auto figures = runControlStep(o.controlStep, o.transport, options);
  if (!figures.isOk()) {
    std::fprintf(stderr, "kvx bench: %s\n", figures.status().toString().c_str());
    return 2;
  }
  ControlReport report;
  report.figures = std::move(figures).value();
  std::printf("%s\n", controlToJson(report).dump().c_str());
  return 0;
}

}  // namespace

int runBench(const BenchOptions& o, const std::string& commandLine,
             const std::function<bool()>& stopRequested) {
  if (!o.controlStep.empty()) return runControlStep(o);
  const MemorySetting memory{o.memory, std::max(o.device, 0), o.gpuPath};
  ScenarioOptions scenarioOptions;
  scenarioOptions.transports = o.transport == "both" ? std::vector<std::string>{"shm", "tcp"}
                                                     : std::vector<std::string>{o.transport};
  scenarioOptions.size = o.quick  ? ScenarioSize::kQuick
                         : o.full ? ScenarioSize::kFull
                                  : ScenarioSize::kDefault;
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
    for (const std::string& n : scenarioNames()) {
      if (n != "trace" || !o.trace.empty()) names.push_back(n);
    }
  }
  std::vector<BenchCase> cases;
  for (const std::string& name : names) {
    Result<std::vector<BenchCase>> expanded =
        name == "sweep" ? sweepCases(o.sweep) : scenarioCases(name, scenarioOptions);
    if (!expanded.isOk()) {
      std::fprintf(stderr, "kvx bench: %s\n", expanded.status().toString().c_str());
      return 2;
    }
    for (BenchCase& c : *expanded) {
      c.memory = memory.kind;
      c.device = memory.device;
      c.gpuPath = memory.gpuPath;
      if (name == "sweep") {
        for (const std::string& transport : scenarioOptions.transports) {
          BenchCase t = c;
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
  SessionOptions session;
  session.runner = {selfPath(), workDir, o.logLevel, std::chrono::seconds(o.timeoutSeconds)};
  session.bareBinary = o.noBare ? "" : findBareBinary(o.bareBinary);
  std::vector<std::string> allNames = names;
  if (control) allNames.push_back("control");
  RunHeader header = describeRun(scenarioOptions.transports, allNames, commandLine, memory);
  for (const std::string& line : header.lines) std::fprintf(stderr, "%s\n", line.c_str());
  const auto outcomes =
      cases.empty() ? std::vector<CaseOutcome>{} : BenchSession(session).run(cases, stopRequested);
  // The data path the agents reported replaces what was expected before they ran.
  addLivePath(header, outcomes, memory);
  if (o.workDir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(workDir, ignored);
  }
  std::optional<ControlReport> controlReport;
  if (control && !stopRequested()) {
    ControlOptions controlOptions;
    controlOptions.transports = scenarioOptions.transports;
    controlOptions.quick = o.quick;
    controlOptions.kvxBinary = selfPath();
    controlOptions.bareBinary = session.bareBinary;
    controlOptions.logLevel = o.logLevel;
    controlReport = runControlScenario(controlOptions, stopRequested);
  }

  if (cases.empty()) {
    for (const std::string& line : header.lines) std::fprintf(stdout, "%s\n", line.c_str());
  } else {
    std::fputs(renderTable(header, outcomes, !o.noVerify).c_str(), stdout);
  }
  if (controlReport) std::fputs(renderControlTable(*controlReport).c_str(), stdout);
  std::fflush(stdout);
  int code = 0;
  nlohmann::json document = toJson(header, outcomes);
  if (controlReport) document["control"] = controlToJson(*controlReport);
  if (!o.json.empty() && !writeFile(o.json, document.dump(2) + "\n")) {
    std::fprintf(stderr, "kvx bench: cannot write --json %s\n", o.json.c_str());
    code = 1;
  }
  if (!o.csv.empty() && !cases.empty() && !writeFile(o.csv, toCsv(outcomes))) {
    std::fprintf(stderr, "kvx bench: cannot write --csv %s\n", o.csv.c_str());
    code = 1;
  }
  if (!o.csv.empty() && controlReport) {
    const std::string path = controlCsvPath(o.csv, !cases.empty());
    if (!writeFile(path, controlToCsv(*controlReport))) {
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
    Status plotted = writePlot(outcomes, o.plot);
    if (!plotted.isOk()) {
      std::fprintf(stderr, "kvx bench: --plot: %s\n", plotted.toString().c_str());
      code = 1;
    }
  }
  for (const CaseOutcome& outcome : outcomes) {
    if (!outcome.clean()) code = 1;
  }
  if (outcomes.size() < cases.size()) code = 1;  // stopped
  if (control && (!controlReport || stopRequested())) code = 1;
  return code;
}

}  // namespace kvx::bench
