#include "bench/kv/control/control_scenario.h"

#include <fmt/format.h>

#include "bench/kv/control/control_clock.h"
#include "bench/kv/control/control_output.h"
#include "bench/kv/control/control_step.h"
#include "process/child_process.h"

namespace kvx::bench {
namespace {

using std::chrono::milliseconds;

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

// Runs `step` in a `kvx bench --control-step` process and reads back the figures it prints
// as one JSON line. A process that dies, hangs past the step timeout or prints no figures
// yields one failed figure saying so.
std::vector<ControlFigure> runStepProcess(const std::string& step, const std::string& transport,
                                          const ControlOptions& options,
                                          const std::function<bool()>& stopRequested) {
  const std::string group = controlStepGroup(step);
  auto fail = [&](const std::string& why) {
    return std::vector<ControlFigure>{failedFigure(group, step, transport, why)};
  };
  std::vector<std::string> args{"bench",       "--scenario", "control",     "--control-step", step,
                                "--transport", transport,    "--log-level", options.logLevel};
  if (options.quick) args.push_back("--quick");
  if (options.bareBinary.empty()) {
    args.push_back("--no-bare");
  } else {
    args.insert(args.end(), {"--bare-binary", options.bareBinary});
  }
  auto child = kvx::process::ChildProcess::spawn(options.kvxBinary, args);
  if (!child.isOk()) return fail("cannot start the step's process: " + child.status().toString());
  const Deadline deadline = Clock::now() + options.stepTimeout;
  std::string json;
  bool ranOut = false, stopped = false;
  while (true) {
    if (Clock::now() >= deadline) ranOut = true;
    if (stopRequested()) stopped = true;
    if (ranOut || stopped) break;
    auto line = child->readLine(milliseconds(200));
    if (line.isOk()) {
      if (!line->empty() && line->front() == '{') json = *line;
    } else if (line.status().code() != StatusCode::kTimedOut) {
      break;  // its output closed: it exited
    }
  }
  const int code = child->waitExit(ranOut || stopped ? milliseconds(0) : milliseconds(10000));
  if (stopped) return {unmeasuredFigure(group, step, transport, "the run was stopped")};
  if (ranOut) {
    return fail(fmt::format("the step did not finish within {} s; its process was killed",
                            options.stepTimeout.count()));
  }
  if (code != 0) {
    return fail(code > 128 ? fmt::format("the step's process died of signal {} (its stderr is "
                                         "above)",
                                         code - 128)
                           : fmt::format("the step's process exited with code {}", code));
  }
  auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (json.empty() || parsed.is_discarded()) return fail("the step's process printed no figures");
  auto report = controlFromJson(parsed);
  if (!report.isOk()) return fail(report.status().toString());
  return std::move(report->figures);
}

}  // namespace

ControlSizes controlSizes(bool quick) {
  ControlSizes s;
  s.descriptors = 16384;
  if (quick) {
    s.poolBytes = {64 * kMiB};
    s.handshakePairs = 3;
    s.handshakePoolBlocks = 32;
    s.descriptorBytes = {64, 4096};
    s.descriptorRepeats = 3;
    s.abortBytes = 64 * kMiB;
    s.deathRequestTokens = 512;
    s.deathWindow = 4;
    s.fixedOverheadBytes = {4096};
    s.fixedOverheadRepeats = 50;
  } else {
    s.poolBytes = {1 * kGiB, 4 * kGiB};
    s.handshakePairs = 8;
    s.handshakePoolBlocks = 256;
    s.descriptorBytes = {64, 4096, 32768};
    s.descriptorRepeats = 5;
    s.abortBytes = 1 * kGiB;
    s.deathRequestTokens = 1024;
    s.deathWindow = 4;
    s.fixedOverheadBytes = {64, 4096, 32768};
    s.fixedOverheadRepeats = 1000;
  }
  return s;
}

ControlReport runControlScenario(const ControlOptions& options,
                                 const std::function<bool()>& stopRequested) {
  ControlReport report;
  for (const std::string& step : controlStepNames()) {
    for (const std::string& transport : options.transports) {
      if (stopRequested()) {
        report.figures.push_back(
            unmeasuredFigure(controlStepGroup(step), step, transport, "the run was stopped"));
        continue;
      }
      if (options.progress) {
        std::fprintf(stderr, "control: %s over %s ...\n", step.c_str(), transport.c_str());
      }
      const auto started = Clock::now();
      for (ControlFigure& f : runStepProcess(step, transport, options, stopRequested)) {
        report.figures.push_back(std::move(f));
      }
      if (options.progress) {
        std::fprintf(stderr, "control: %s over %s took %.1f s\n", step.c_str(), transport.c_str(),
                     msSince(started) / 1000);
      }
    }
  }
  report.notes = {
      "Each step runs in a process of its own, with its agents in that process (real UCX over",
      "the transport shown); for peer death the decode agent is one more `kvx agent` process,",
      "SIGKILLed. CPU figures are the calling thread's CLOCK_THREAD_CPUTIME_ID; ns/desc = that",
      "CPU / descriptors. The makeTransfer + post requests use random local and remote orders",
      "(no coalescing) and a window as large as the request, so post() puts every operation on",
      "the measured thread; on shm it also copies the data there (one-sided into UCX-allocated",
      "memory): the 64 B row is the per-descriptor overhead, larger rows add the copy. On tcp",
      "post() includes UCX's send for operations that go out at once (socket room), so it",
      "varies from run to run (0.1-5 us/desc here); queued operations cost far less.",
      "Latencies are wall time (steady clock); p50/max over fresh agent pairs for the handshake.",
  };
  return report;
}

}  // namespace kvx::bench
