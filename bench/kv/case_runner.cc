#include "bench/kv/case_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "bench/kv/agent_process.h"
#include "kv/pool/model_shape.h"
#include "workload/trace_reader.h"

namespace kvx::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kStartTimeout = seconds(60);

std::string num(double value) { return fmt::format("{}", value); }

// The --model argument: a built-in name as is, JSON written to a file.
Result<std::string> modelArgument(const std::string& model, const std::string& dir,
                                  const std::string& label) {
  if (model.empty() || model.front() != '{') return model;
  const std::string path =
      dir + "/model-" + std::to_string(std::hash<std::string>{}(label)) + ".json";
  std::ofstream file(path);
  file << model;
  if (!file) return notFound("cannot write the model file " + path);
  return path;
}

std::vector<std::string> commonArgs(const BenchCase& c, const std::string& model,
                                    std::uint64_t blocks, const std::string& logLevel) {
  std::vector<std::string> args{"--model",     model,         "--layout",    c.layout,
                                "--transport", c.transport,   "--blocks",    std::to_string(blocks),
                                "--listen",    "127.0.0.1:0", "--log-level", logLevel};
  if (!c.populate) args.push_back("--no-populate");
  if (c.memory == "cuda") {
    args.insert(args.end(), {"--memory", "cuda", "--device", std::to_string(c.device), "--gpu-path",
                             c.gpuPath});
  }
  return args;
}

// The data paths and GPU runtime the prefill agents' reports name.
void readPaths(const std::vector<nlohmann::json>& prefillReports, CaseRun& run) {
  for (const nlohmann::json& report : prefillReports) {
    for (const nlohmann::json& peer : report.value("peers", nlohmann::json::array())) {
      const std::string path = peer.value("dataPath", std::string());
      if (!path.empty() &&
          std::find(run.dataPaths.begin(), run.dataPaths.end(), path) == run.dataPaths.end()) {
        run.dataPaths.push_back(path);
      }
    }
    const nlohmann::json memory = report.value("memory", nlohmann::json::object());
    if (run.gpuRuntime.empty()) run.gpuRuntime = memory.value("gpuRuntime", std::string());
  }
}

// "N of M prompts cut to T tokens (the longest had L): ..." for the requests of `c`'s
// trace the prefill agent replays; empty when none is longer than `tokens`.
Result<std::string> clippedPromptsNote(const BenchCase& c, std::uint64_t tokens) {
  KVX_ASSIGN_OR_RETURN(auto records, workload::readTraceFile(c.trace));
  if (c.requests != 0 && records.size() > c.requests) records.resize(c.requests);
  std::uint64_t clipped = 0, longest = 0;
  for (const workload::TraceRecord& r : records) {
    if (r.inputLength > tokens) ++clipped;
    longest = std::max(longest, r.inputLength);
  }
  if (clipped == 0) return std::string();
  return fmt::format(
      "{} of {} prompts cut to {} tokens, what the prefill pool holds (the longest had {})",
      clipped, records.size(), tokens, longest);
}

}  // namespace

std::uint64_t CaseRunner::poolBlocks(const kv::ModelShape& shape, std::uint64_t tokens,
                                     std::uint64_t window, std::uint64_t budgetBytes) {
  const std::uint64_t perRequest = shape.blocksForTokens(tokens);
  const std::uint64_t wanted = perRequest * (window + 1) + kPoolSlackBlocks;
  const std::uint64_t blockBytes = shape.segmentBytes() * shape.kvCount() * shape.layers;
  if (budgetBytes == 0 || blockBytes == 0) return wanted;
  const std::uint64_t affordable =
      std::max(budgetBytes / blockBytes, perRequest + kPoolSlackBlocks);
  return std::min(wanted, affordable);
}

Result<CaseRun> CaseRunner::run(const BenchCase& c) const {
  KVX_ASSIGN_OR_RETURN(kv::ModelShape shape, kv::shapeFromNameOrJson(c.model));
  KVX_ASSIGN_OR_RETURN(std::string model, modelArgument(c.model, options_.workDir, c.label));
  CaseRun run;
  run.segmentBytes = shape.segmentBytes() / std::max<std::uint32_t>(1, c.decodeTp);
  const std::uint64_t trafficWindow = c.window * c.prefills;
  const std::uint64_t tokens = c.tokens;  // a trace's: the prompt length pools are sized for
  const std::uint64_t decodeBlocks =
      poolBlocks(shape, tokens, trafficWindow, c.poolBudgetBytes) + c.prefixCacheBlocks;
  const std::uint64_t prefillBlocks = poolBlocks(shape, tokens, c.window, c.poolBudgetBytes);
  const std::string dir = options_.workDir;
  // A trace prompt longer than the prefill pool can hold could never be placed: it is cut
  // to what fits, and the output says how many were.
  const std::uint64_t clipTokens = (prefillBlocks - kPoolSlackBlocks) * shape.tokensPerBlock;
  if (!c.trace.empty()) {
    KVX_ASSIGN_OR_RETURN(std::string note, clippedPromptsNote(c, clipTokens));
    if (!note.empty()) run.notes.push_back(std::move(note));
  }

  std::vector<AgentProcess> decodes;
  std::vector<std::string> peerArgs;
  const std::uint32_t decodeCount = std::max(c.decodes, c.decodeTp);
  for (std::uint32_t i = 0; i < decodeCount; ++i) {
    std::vector<std::string> args{"--role", "decode", "--prefix-cache-blocks",
                                  std::to_string(c.prefixCacheBlocks)};
    const auto common = commonArgs(c, model, decodeBlocks, options_.logLevel);
    args.insert(args.end(), common.begin(), common.end());
    if (c.verify) args.push_back("--verify");
    if (c.decodeTp > 1) {
      args.insert(args.end(),
                  {"--tp-size", std::to_string(c.decodeTp), "--tp-rank", std::to_string(i)});
    }
    const std::string name = "decode-" + std::to_string(i);
    auto started = AgentProcess::start(options_.kvxBinary, name, args, dir + "/" + name + ".json",
                                       kStartTimeout);
    if (!started.isOk()) return started.status();
    peerArgs.insert(peerArgs.end(), {"--peer", started->address()});
    decodes.push_back(std::move(started).value());
  }

  std::vector<AgentProcess> prefills;
  const std::uint32_t prefillCount = std::max(c.prefills, c.prefillTp);
  for (std::uint32_t i = 0; i < prefillCount; ++i) {
    std::vector<std::string> args{"--role",
                                  "prefill",
                                  "--mode",
                                  c.mode,
                                  "--layerwise",
                                  c.layerwise ? "on" : "off",
                                  "--layer-ms",
                                  num(c.layerMs),
                                  "--max-outstanding",
                                  std::to_string(c.window),
                                  "--requests",
                                  std::to_string(c.requests),
                                  "--block-order",
                                  c.blockOrder,
                                  "--timeout-ms",
                                  std::to_string(options_.timeout.count() * 1000)};
    const auto common = commonArgs(c, model, prefillBlocks, options_.logLevel);
    args.insert(args.end(), common.begin(), common.end());
    if (c.trace.empty()) {
      // Every prefill agent of an incast replays its own prompts; the ranks of one TP
      // group replay the same ones.
      const std::uint64_t seed = c.prefillTp > 1 ? 1 : 1 + i;
      args.insert(args.end(), {"--synthetic", "--seed", std::to_string(seed), "--rate", "0",
                               "--min-tokens", std::to_string(c.tokens), "--max-tokens",
                               std::to_string(c.tokens), "--prefix-share", num(c.prefixShare)});
    } else {
      args.insert(args.end(), {"--trace", c.trace, "--time-scale", num(c.timeScale),
                               "--clip-tokens", std::to_string(clipTokens)});
    }
    if (!c.verify) args.push_back("--no-fill");
    if (c.prefillTp > 1 || c.decodeTp > 1) {
      args.insert(args.end(), {"--tp-size", std::to_string(c.prefillTp), "--tp-rank",
                               std::to_string(i), "--decode-tp", std::to_string(c.decodeTp)});
    }
    args.insert(args.end(), peerArgs.begin(), peerArgs.end());
    const std::string name = "prefill-" + std::to_string(i);
    auto started = AgentProcess::start(options_.kvxBinary, name, args, dir + "/" + name + ".json",
                                       kStartTimeout);
    if (!started.isOk()) {
      run.problems.push_back(started.status().toString());
      break;
    }
    prefills.push_back(std::move(started).value());
  }

  const auto deadline = Clock::now() + options_.timeout;
  for (AgentProcess& p : prefills) {
    const int code = p.awaitExit(deadline);
    if (code != 0) run.problems.push_back(p.name() + " exited with " + std::to_string(code));
  }
  for (AgentProcess& d : decodes) {
    const int code = d.stop(seconds(20));
    if (code != 0) run.problems.push_back(d.name() + " exited with " + std::to_string(code));
  }
  std::vector<nlohmann::json> prefillReports, decodeReports;
  for (const AgentProcess& p : prefills) {
    auto report = p.report();
    if (!report.isOk()) return report.status();
    prefillReports.push_back(std::move(report).value());
  }
  for (const AgentProcess& d : decodes) {
    auto report = d.report();
    if (!report.isOk()) return report.status();
    decodeReports.push_back(std::move(report).value());
  }
  readPaths(prefillReports, run);
  KVX_ASSIGN_OR_RETURN(run.metrics, computeMetrics(c, prefillReports, decodeReports));
  return run;
}

}  // namespace kvx::bench
