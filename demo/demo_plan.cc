#include "demo/demo_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "daemon/agent_config.h"
#include "daemon/gpu_memory_options.h"
#include "kvx/host_memory.h"
#include "workload/trace_reader.h"

namespace kvx::demo {
namespace {

constexpr std::uint32_t kDecodeAgents = 2;  // without TP
constexpr std::uint64_t kDefaultBlocks = 1024;
constexpr std::uint64_t kTpDecodeBlocks = 2048;
constexpr std::uint64_t kMaxRankPoolBytes = 4ull << 30;
constexpr double kDefaultRate = 100;
constexpr double kGatherRate = 5;

std::vector<std::string> poolArgs(const DemoOptions& o, std::uint64_t blocks) {
  std::vector<std::string> args = {"--model",     o.model,     "--layout", o.layout,
                                   "--transport", o.transport, "--blocks", std::to_string(blocks),
                                   "--log-level", o.logLevel,  "--listen", "127.0.0.1:0",
                                   "--memory",    o.memory};
  if (o.memory == "cuda") {
    args.insert(args.end(),
                {"--device", std::to_string(std::max(o.device, 0)), "--gpu-path", o.gpuPath});
  }
  return args;
}

std::vector<std::string> tpArgs(std::uint32_t size, std::uint32_t rank) {
  return {"--tp-size", std::to_string(size), "--tp-rank", std::to_string(rank)};
}

void append(std::vector<std::string>& to, const std::vector<std::string>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// A pool of `blocks` for the trace's largest prompt: raised to `need` where the demo chose its
// size, refused where the user gave one too small.
Status fitPool(std::uint64_t& blocks, std::uint64_t need, bool userSized, const char* pool,
               const char* option, const std::string& largest) {
  if (blocks >= need) return Status::ok();
  if (userSized) {
    return invalidArgument(fmt::format("{} needs {} blocks in each {}, which has {}: raise {}",
                                       largest, need, pool, blocks, option));
  }
  blocks = need;
  return Status::ok();
}

// With a trace, every pool must hold the largest prompt the demo replays: the replay would
// otherwise fail each such request after a minute of others. Pools the demo sizes grow to it
// within what the host has; a size the user gave that cannot hold it is refused at once.
Status fitPoolsToTrace(const DemoOptions& o, const kv::ModelShape& shape, std::uint32_t parts,
                       std::uint32_t prefills, std::uint32_t decodes, DemoPlan& plan) {
  auto records = workload::readTraceFile(o.trace);
  if (!records.isOk()) return records.status().withContext("--trace");
  const std::size_t replayed = std::min<std::size_t>(o.requests, records->size());
  if (replayed == 0) return Status::ok();
  std::size_t at = 0;
  for (std::size_t i = 1; i < replayed; ++i) {
    if ((*records)[i].inputLength > (*records)[at].inputLength) at = i;
  }
  const std::uint64_t tokens = (*records)[at].inputLength;
  const std::uint64_t blocks = shape.blocksForTokens(tokens);
  const std::string largest =
      fmt::format("the largest prompt of the first {} in the trace (line {}, {} tokens)", replayed,
                  at + 1, tokens);
  KVX_RETURN_IF_ERROR(fitPool(plan.prefillBlocks, blocks * parts, o.prefillBlocks != 0,
                              "prefill pool", "--prefill-blocks", largest));
  KVX_RETURN_IF_ERROR(fitPool(plan.decodeBlocks, blocks, o.decodeBlocks != 0, "decode pool",
                              "--decode-blocks", largest));
  if (o.memory != "host") return Status::ok();
  // A rank holds its share of the heads; an MLA block is not split.
  const std::uint64_t blockBytes = shape.bytesPerToken() * shape.tokensPerBlock;
  const std::uint64_t prefillBlockBytes = shape.mla ? blockBytes : blockBytes / o.prefillTp;
  const std::uint64_t decodeBlockBytes = shape.mla ? blockBytes : blockBytes / o.decodeTp;
  const std::uint64_t total = prefills * plan.prefillBlocks * prefillBlockBytes +
                              decodes * plan.decodeBlocks * decodeBlockBytes;
  Status room = checkHostMemoryRoom(total, readHostMemoryRoom());
  if (!room.isOk()) {
    return Status(room.code(),
                  fmt::format("the pools ({} prefill of {} blocks, {} decode of {} blocks) for {}: "
                              "{}; replay fewer requests (--requests) or a shorter trace",
                              prefills, plan.prefillBlocks, decodes, plan.decodeBlocks, largest,
                              room.message()));
  }
  return Status::ok();
}

}  // namespace

Result<DemoPlan> planDemo(const DemoOptions& o) {
  KVX_RETURN_IF_ERROR(
      daemon::validateGpuMemoryOptions(o.memory, o.device, o.gpuPath, "the pools are"));
  // The agents read --requests 0 as "no limit" (the whole synthetic workload): a demo of no
  // request is a mistake, not that.
  if (o.requests == 0) return invalidArgument("--requests must be at least 1");
  DemoPlan plan;
  plan.prefillTp = o.prefillTp;
  plan.decodeTp = o.decodeTp;
  const bool tp = plan.tensorParallel();
  auto shape = daemon::loadModelShape(o.model);
  if (!shape.isOk()) return shape.status();
  std::uint64_t rankBlockBytes = shape->segmentBytes() * shape->kvCount() * shape->layers;
  std::uint32_t parts = 1;  // requests a prefill rank sends per prompt
  if (tp) {
    auto checked = makeTpPlan(shape->kvHeads, shape->mla, o.prefillTp, 0, o.decodeTp);
    if (!checked.isOk()) {
      return invalidArgument(fmt::format("--prefill-tp {} / --decode-tp {} with model {}: {}",
                                         o.prefillTp, o.decodeTp, o.model,
                                         checked.status().message()));
    }
    rankBlockBytes /= o.prefillTp;
    parts = static_cast<std::uint32_t>(slicePlan(*checked, "").size());
  }
  plan.rate = o.rate >= 0 ? o.rate : o.prefillTp > o.decodeTp ? kGatherRate : kDefaultRate;
  plan.decodeBlocks = o.decodeBlocks != 0 ? o.decodeBlocks : tp ? kTpDecodeBlocks : kDefaultBlocks;
  plan.prefillBlocks = o.prefillBlocks;
  if (plan.prefillBlocks == 0) {
    plan.prefillBlocks = std::max(
        kDefaultBlocks, std::min(kDefaultBlocks * parts, kMaxRankPoolBytes / rankBlockBytes));
  }

  const std::uint32_t decodes = tp ? o.decodeTp : kDecodeAgents;
  const std::uint32_t prefills = tp ? o.prefillTp : 1;
  if (!o.trace.empty()) {
    KVX_RETURN_IF_ERROR(fitPoolsToTrace(o, *shape, parts, prefills, decodes, plan));
  }
  for (std::uint32_t q = 0; q < decodes; ++q) {
    DemoAgent agent{"decode-" + std::to_string(q), {}};
    agent.args = {"agent",
                  "--role",
                  "decode",
                  "--name",
                  agent.name,
                  "--verify",
                  "--prefix-cache-blocks",
                  std::to_string(o.prefixCacheBlocks)};
    if (tp) append(agent.args, tpArgs(o.decodeTp, q));
    append(agent.args, poolArgs(o, plan.decodeBlocks));
    plan.decodes.push_back(std::move(agent));
  }
  for (std::uint32_t r = 0; r < prefills; ++r) {
    DemoAgent agent{"prefill-" + std::to_string(r), {}};
    agent.args = {"agent",
                  "--role",
                  "prefill",
                  "--name",
                  agent.name,
                  "--mode",
                  o.mode,
                  "--layerwise",
                  o.layerwise,
                  "--layer-ms",
                  std::to_string(o.layerMs),
                  "--time-scale",
                  std::to_string(o.timeScale),
                  "--max-outstanding",
                  std::to_string(o.maxOutstanding),
                  "--requests",
                  std::to_string(o.requests)};
    if (o.trace.empty()) {
      // Every rank of a TP group replays the same prompts: the same seed.
      append(agent.args,
             {"--synthetic", "--seed", std::to_string(o.seed), "--rate", std::to_string(plan.rate),
              "--min-tokens", std::to_string(o.minTokens), "--max-tokens",
              std::to_string(o.maxTokens), "--prefix-share", std::to_string(o.prefixShare)});
    } else {
      append(agent.args, {"--trace", o.trace});
    }
    if (tp) {
      append(agent.args, tpArgs(o.prefillTp, r));
      append(agent.args, {"--decode-tp", std::to_string(o.decodeTp)});
    }
    append(agent.args, poolArgs(o, plan.prefillBlocks));
    plan.prefills.push_back(std::move(agent));
  }

  const std::string agents =
      tp ? fmt::format(
               "prefill TP{} -> decode TP{}: {} decode ranks of {} blocks, {} prefill "
               "ranks of {}",
               o.prefillTp, o.decodeTp, o.decodeTp, plan.decodeBlocks, o.prefillTp,
               plan.prefillBlocks)
         : fmt::format("{} decode agents of {} blocks, prefill pool of {}", decodes,
                       plan.decodeBlocks, plan.prefillBlocks);
  const std::string memory =
      o.memory == "cuda"
          ? fmt::format(" in CUDA device {} memory (GPU path {})", std::max(o.device, 0), o.gpuPath)
          : "";
  plan.title = fmt::format(
      "kvx demo: {} requests of {}; {} ({} layout){} over {}; mode {}, "
      "layer-wise {}; {}",
      o.requests,
      o.trace.empty() ? fmt::format("a synthetic workload at {}/s", plan.rate) : o.trace, o.model,
      o.layout, memory, o.transport, o.mode, o.layerwise, agents);
  return plan;
}

}  // namespace kvx::demo
